from __future__ import annotations

import threading
from dataclasses import replace
from decimal import Decimal

import pytest
from django.db import connection

from chatbot.orders import models
from chatbot.orders.backends import DjangoOrderService
from chatbot.orders.selectors import refund_eta
from chatbot.orders.types import Address, OrderNotAllowed, OrderNotFound, OrderServiceError

from .conftest import (
    ETHAN,
    ETHAN_PENDING_GIFT_CARD,
    JAMES,
    JAMES_EMAIL,
    JAMES_PROCESSED,
    MOHAMED,
    MOHAMED_CANCELLED,
    MOHAMED_DELIVERED,
    MOHAMED_PENDING,
    MOHAMED_PROCESSED,
)

NEW_ADDRESS = Address(
    address1="1 Main Street", address2="", city="Columbus", state="OH", zip="43215"
)


def _snapshot(order_id: str) -> dict[str, object]:
    order = models.Order.objects.get(order_id=order_id)
    return {f.attname: getattr(order, f.attname) for f in models.Order._meta.concrete_fields}


def test_order_get_returns_own_order_facts(shop: DjangoOrderService) -> None:
    facts = shop.order_get(customer_id=JAMES, order_id=JAMES_PROCESSED)
    assert facts is not None
    assert facts.order_id == "#W2611340"
    assert facts.status == "processed"
    assert [(i.name, i.price) for i in facts.items] == [
        ("Water Bottle", Decimal("47.84")),
        ("Office Chair", Decimal("488.81")),
    ]
    assert facts.total == Decimal("536.65")
    assert facts.tracking_ids == ("357962501027",)
    assert facts.payment_method == "gift_card"
    assert facts.address.one_line() == "215 River Road, Suite 991, New York, NY 10083"
    assert facts.carrier in {"UPS", "FedEx", "USPS", "DHL"}
    assert facts.estimated_delivery is not None and facts.estimated_delivery > facts.placed_on


@pytest.mark.parametrize("typed", ["#W2611340", "W2611340", "w2611340", " # W2611340 "])
def test_order_ids_are_normalised(shop: DjangoOrderService, typed: str) -> None:
    facts = shop.order_get(customer_id=JAMES, order_id=typed)
    assert facts is not None and facts.order_id == "#W2611340"


def test_someone_elses_order_looks_exactly_like_a_missing_one(shop: DjangoOrderService) -> None:
    # James's order exists, but Mohamed asks for it.
    assert shop.order_get(customer_id=MOHAMED, order_id=JAMES_PROCESSED) is None
    assert shop.order_get(customer_id=MOHAMED, order_id="#W0000000") is None
    assert shop.order_get(customer_id=MOHAMED, order_id="not an id") is None
    assert JAMES_PROCESSED not in {
        o.order_id for o in shop.orders_for_customer(customer_id=MOHAMED)
    }

    errors = []
    for order_id in (ETHAN_PENDING_GIFT_CARD, "#W0000000"):
        with pytest.raises(OrderNotFound) as caught:
            shop.order_cancel(customer_id=MOHAMED, order_id=order_id, reason="no longer needed")
        errors.append(
            (type(caught.value), caught.value.code, str(caught.value).replace(order_id, "?"))
        )
    assert errors[0] == errors[1]
    # ...and Ethan's pending order was not touched.
    assert models.Order.objects.get(order_id=ETHAN_PENDING_GIFT_CARD).status == "pending"


def test_orders_for_customer_lists_only_their_orders(shop: DjangoOrderService) -> None:
    ids = {o.order_id for o in shop.orders_for_customer(customer_id=MOHAMED)}
    assert ids == {MOHAMED_PENDING, MOHAMED_PROCESSED, MOHAMED_DELIVERED, MOHAMED_CANCELLED}
    assert shop.orders_for_customer(customer_id="nobody_0000") == []


def test_customer_lookups(shop: DjangoOrderService) -> None:
    james = shop.customer_by_email(email="  James.Li4495@Example.com ")
    assert james is not None and james.customer_id == JAMES
    assert shop.customer_by_email(email=JAMES_EMAIL.replace("4495", "4496")) is None
    assert shop.customer_by_name_zip(first_name="james", last_name="LI", zip="10083") == james
    assert shop.customer_by_name_zip(first_name="James", last_name="Li", zip="10084") is None
    assert shop.customer_by_name_zip(first_name="", last_name="Li", zip="10083") is None
    assert shop.customer_by_id(customer_id=JAMES) == james
    assert shop.customer_by_id(customer_id="nobody_0000") is None


def test_cancel_pending_order_records_refund_to_original_method(shop: DjangoOrderService) -> None:
    before = shop.order_get(customer_id=MOHAMED, order_id=MOHAMED_PENDING)
    assert before is not None and before.status == "pending" and before.refunds == ()

    after = shop.order_cancel(customer_id=MOHAMED, order_id="w8844578", reason="ordered by mistake")

    assert after.status == "cancelled"
    assert after.refunds == (before.total,)
    assert after.payment_method == "paypal"
    assert refund_eta(payment_method=after.payment_method) == "within 5 to 7 business days"
    stored = models.Order.objects.get(order_id=MOHAMED_PENDING)
    assert stored.status == "cancelled"
    assert stored.cancel_reason == "ordered by mistake"
    assert stored.payment_history[-1] == {
        "transaction_type": "refund",
        "amount": float(before.total),
        "payment_method_id": stored.payment_history[0]["payment_method_id"],
    }
    # Reading it back gives what the write returned.
    assert shop.order_get(customer_id=MOHAMED, order_id=MOHAMED_PENDING) == after


def test_cancel_gift_card_order_is_refunded_immediately(shop: DjangoOrderService) -> None:
    facts = shop.order_cancel(
        customer_id=ETHAN, order_id=ETHAN_PENDING_GIFT_CARD, reason="no longer needed"
    )
    assert facts.payment_method == "gift_card"
    assert refund_eta(payment_method=facts.payment_method) == "immediately"
    assert facts.refunds == (facts.total,)


@pytest.mark.parametrize(
    ("order_id", "why"),
    [
        (MOHAMED_PROCESSED, "already been processed"),
        (MOHAMED_DELIVERED, "already been delivered"),
        (MOHAMED_CANCELLED, "already cancelled"),
    ],
)
def test_cancel_non_pending_order_is_refused_and_changes_nothing(
    shop: DjangoOrderService, order_id: str, why: str
) -> None:
    before = _snapshot(order_id)
    with pytest.raises(OrderNotAllowed) as caught:
        shop.order_cancel(customer_id=MOHAMED, order_id=order_id, reason="no longer needed")
    assert caught.value.code == "order_not_allowed"
    assert why in str(caught.value) and order_id in str(caught.value)
    assert _snapshot(order_id) == before


def test_change_address_of_pending_order(shop: DjangoOrderService) -> None:
    facts = shop.order_change_address(
        customer_id=MOHAMED, order_id=MOHAMED_PENDING, address=NEW_ADDRESS
    )
    assert facts.address == NEW_ADDRESS
    assert facts.status == "pending"
    assert models.Order.objects.get(order_id=MOHAMED_PENDING).address["city"] == "Columbus"


@pytest.mark.parametrize("order_id", [MOHAMED_PROCESSED, MOHAMED_DELIVERED, MOHAMED_CANCELLED])
def test_change_address_refused_unless_pending(shop: DjangoOrderService, order_id: str) -> None:
    before = _snapshot(order_id)
    with pytest.raises(OrderNotAllowed, match="Only pending orders can be changed"):
        shop.order_change_address(customer_id=MOHAMED, order_id=order_id, address=NEW_ADDRESS)
    assert _snapshot(order_id) == before


def test_change_address_rejects_incomplete_address(shop: DjangoOrderService) -> None:
    before = _snapshot(MOHAMED_PENDING)
    with pytest.raises(OrderServiceError) as caught:
        shop.order_change_address(
            customer_id=MOHAMED, order_id=MOHAMED_PENDING, address=replace(NEW_ADDRESS, city=" ")
        )
    assert caught.value.code == "invalid_address" and "city" in str(caught.value)
    assert _snapshot(MOHAMED_PENDING) == before


def test_shipping_options(shop: DjangoOrderService) -> None:
    options = {o.name: o for o in shop.shipping_options()}
    assert options["Standard"].price == Decimal("5.99")
    assert options["Standard"].free_over == Decimal("50.00")
    assert (options["Express"].days_min, options["Express"].days_max) == (1, 2)
    assert options["Express"].free_over is None


# available_apps: the flush after the test empties only this app's tables (fast).
@pytest.mark.django_db(transaction=True, available_apps=["chatbot.orders"])
def test_concurrent_cancels_refund_once(shop: DjangoOrderService) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL; SQLite serialises writers anyway")
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def cancel() -> None:
        try:
            barrier.wait()
            shop.order_cancel(customer_id=MOHAMED, order_id=MOHAMED_PENDING, reason="x")
            outcomes.append("cancelled")
        except OrderNotAllowed:
            outcomes.append("refused")
        finally:
            connection.close()

    threads = [threading.Thread(target=cancel) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes) == ["cancelled", "refused"]
    history = models.Order.objects.get(order_id=MOHAMED_PENDING).payment_history
    assert [e["transaction_type"] for e in history] == ["payment", "refund"]
