"""HttpOrderService against the real reference API (api.py) served by live_server."""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Iterator
from decimal import Decimal

import httpx
import pytest
from django.conf import settings
from django.test import override_settings

from chatbot.orders import models
from chatbot.orders.backends import (
    DjangoOrderService,
    HttpOrderService,
    get_order_service,
)
from chatbot.orders.types import Address, OrderNotAllowed, OrderNotFound, OrderServiceError

from .conftest import (
    DAIKI_SILVA,
    ETHAN_PENDING_GIFT_CARD,
    JAMES,
    JAMES_EMAIL,
    JAMES_PROCESSED,
    MOHAMED,
    MOHAMED_DELIVERED,
    MOHAMED_PENDING,
    SHARED_ZIP,
)

API_KEY = "order-api-test-key"

# live_server needs committed data: the server thread has its own connection.
# available_apps: the flush after each test empties only this app's tables, in a
# fraction of the time a whole-database flush takes.
live = pytest.mark.django_db(transaction=True, available_apps=["chatbot.orders"])


@pytest.fixture
def api_url(live_server: object, shop: DjangoOrderService) -> Iterator[str]:
    with override_settings(TIERDESK_ORDER_API_KEY=API_KEY):
        yield f"{live_server.url}/shop-api/"  # type: ignore[attr-defined]


@pytest.fixture
def http(api_url: str) -> Iterator[HttpOrderService]:
    service = HttpOrderService(base_url=api_url, api_key=API_KEY, timeout_s=5)
    yield service
    service.close()


@pytest.fixture
def raw() -> Iterator[httpx.Client]:
    # One client for the raw requests: building one costs an SSL context (~0.2 s).
    with httpx.Client(timeout=5) as client:
        yield client


@live
def test_http_gives_the_same_facts_as_the_shop(
    http: HttpOrderService, shop: DjangoOrderService
) -> None:
    facts = http.order_get(customer_id=JAMES, order_id="w2611340")
    assert facts is not None
    assert facts == shop.order_get(customer_id=JAMES, order_id=JAMES_PROCESSED)
    assert facts.total == Decimal("536.65")
    assert http.orders_for_customer(customer_id=MOHAMED) == shop.orders_for_customer(
        customer_id=MOHAMED
    )
    assert http.shipping_options() == shop.shipping_options()

    james = shop.customer_by_id(customer_id=JAMES)
    assert http.customer_by_id(customer_id=JAMES) == james
    assert http.customer_by_id(customer_id="nobody_0000") is None
    # Ids that could break out of their path segment are just unknown ids.
    for odd in ("..", "a/b", "james_li_5688/orders", "%2E%2E", "?x=1"):
        assert http.customer_by_id(customer_id=odd) is None
    assert http.orders_for_customer(customer_id="..") == []
    assert http.customer_by_email(email=JAMES_EMAIL.upper()) == james
    assert http.customer_by_email(email="nobody@example.com") is None
    assert http.customer_by_name_zip(first_name="James", last_name="Li", zip="10083") == james
    assert http.customer_by_name_zip(first_name="James", last_name="Li", zip="10084") is None
    in_zip = {c.customer_id for c in http.customers_in_zip(zip=SHARED_ZIP)}
    assert DAIKI_SILVA in in_zip and len(in_zip) == 3


@live
def test_api_answers_what_docs_order_api_md_shows(api_url: str, raw: httpx.Client) -> None:
    doc = (settings.BASE_DIR / "docs" / "order-api.md").read_text()
    example = next(
        json.loads(block)
        for block in re.findall(r"```json\n(.*?)```", doc, re.DOTALL)
        if '"order_id": "#W2611340"' in block
    )
    response = raw.get(
        f"{api_url}customers/{JAMES}/orders/W2611340",
        headers={"Authorization": f"Bearer {API_KEY}"},
    )
    assert response.status_code == 200
    order = response.json()["order"]
    # The demo dates are relative to the day the shop was seeded (seed.py): the rest is
    # exactly what the documentation shows.
    for key in ("placed_on", "estimated_delivery"):
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", order.pop(key)) and example.pop(key)
    assert order == example


@live
def test_http_someone_elses_order_looks_like_a_missing_one(
    http: HttpOrderService, api_url: str, raw: httpx.Client
) -> None:
    assert http.order_get(customer_id=MOHAMED, order_id=JAMES_PROCESSED) is None
    assert http.order_get(customer_id=MOHAMED, order_id="#W0000000") is None
    for order_id in (ETHAN_PENDING_GIFT_CARD, "#W0000000"):
        with pytest.raises(OrderNotFound):
            http.order_cancel(customer_id=MOHAMED, order_id=order_id, reason="no longer needed")
    assert models.Order.objects.get(order_id=ETHAN_PENDING_GIFT_CARD).status == "pending"

    # On the wire too: same status, same code, same message apart from the id asked for.
    headers = {"Authorization": f"Bearer {API_KEY}"}
    bodies = []
    for order_id in ("W2611340", "W0000000"):
        response = raw.get(f"{api_url}customers/{MOHAMED}/orders/{order_id}", headers=headers)
        assert response.status_code == 404
        bodies.append(response.text.replace(order_id, "?"))
    assert bodies[0] == bodies[1]


@live
def test_http_cancel_and_change_address(http: HttpOrderService) -> None:
    address = Address(
        address1="1 Main Street", address2="", city="Columbus", state="OH", zip="43215"
    )
    with pytest.raises(OrderServiceError) as caught:
        http.order_change_address(
            customer_id=MOHAMED,
            order_id=MOHAMED_PENDING,
            address=Address(address1="", address2="", city="Columbus", state="OH", zip="43215"),
        )
    assert caught.value.code == "invalid_address"

    changed = http.order_change_address(
        customer_id=MOHAMED, order_id=MOHAMED_PENDING, address=address
    )
    assert changed.address == address

    cancelled = http.order_cancel(
        customer_id=MOHAMED, order_id=MOHAMED_PENDING, reason="no longer needed"
    )
    assert cancelled.status == "cancelled"
    assert cancelled.refunds == (cancelled.total,)
    assert models.Order.objects.get(order_id=MOHAMED_PENDING).status == "cancelled"

    with pytest.raises(OrderNotAllowed) as caught:
        http.order_change_address(customer_id=MOHAMED, order_id=MOHAMED_PENDING, address=address)
    assert "already cancelled" in str(caught.value)

    with pytest.raises(OrderNotAllowed) as caught:
        http.order_cancel(customer_id=MOHAMED, order_id=MOHAMED_DELIVERED, reason="x")
    assert caught.value.code == "order_not_allowed"
    assert "already been delivered" in str(caught.value)
    assert models.Order.objects.get(order_id=MOHAMED_DELIVERED).status == "delivered"


@live
def test_api_requires_the_key_and_is_off_without_one(api_url: str, raw: httpx.Client) -> None:
    url = f"{api_url}customers/{JAMES}"
    assert raw.get(url).status_code == 401
    assert raw.get(url, headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert raw.get(url, headers={"Authorization": API_KEY}).status_code == 401
    ok = raw.get(url, headers={"Authorization": f"Bearer {API_KEY}"})
    assert ok.status_code == 200 and ok.json()["customer"]["customer_id"] == JAMES

    wrong = HttpOrderService(base_url=api_url, api_key="wrong", timeout_s=5)
    with pytest.raises(OrderServiceError) as caught:
        wrong.order_get(customer_id=JAMES, order_id=JAMES_PROCESSED)
    assert caught.value.code == "order_system_unavailable"
    wrong.close()

    method = raw.post(f"{api_url}shipping-options", headers={"Authorization": f"Bearer {API_KEY}"})
    assert method.status_code == 405
    assert method.json()["error"]["code"] == "method_not_allowed"

    with override_settings(TIERDESK_ORDER_API_KEY=""):
        response = raw.get(f"{api_url}customers/{JAMES}", headers={"Authorization": "Bearer x"})
        assert response.status_code == 404
        # A disabled API must not read as "no such order" for every shopper.
        service = HttpOrderService(base_url=api_url, api_key=API_KEY, timeout_s=5)
        with pytest.raises(OrderServiceError) as caught:
            service.order_get(customer_id=JAMES, order_id=JAMES_PROCESSED)
        assert caught.value.code == "order_system_unavailable"
        service.close()


def test_closed_port_is_order_system_unavailable(db: None) -> None:
    # db: the order id is read in the shop profile's forms.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # The port is closed again now: nothing listens there.
    service = HttpOrderService(base_url=f"http://127.0.0.1:{port}/shop-api/", api_key="k")
    started = time.monotonic()
    with pytest.raises(OrderServiceError) as caught:
        service.order_get(customer_id=JAMES, order_id=JAMES_PROCESSED)
    assert caught.value.code == "order_system_unavailable"
    assert "cannot be reached" in str(caught.value)
    assert time.monotonic() - started < 3
    service.close()


def test_silent_server_times_out_as_unavailable() -> None:
    # A socket that listens but never answers: the connection is accepted by the
    # kernel, and the read must time out.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        port = silent.getsockname()[1]
        service = HttpOrderService(base_url=f"http://127.0.0.1:{port}/", api_key="k", timeout_s=0.3)
        started = time.monotonic()
        with pytest.raises(OrderServiceError) as caught:
            service.shipping_options()
        assert caught.value.code == "order_system_unavailable"
        assert "within 0.3 s" in str(caught.value)
        assert time.monotonic() - started < 2
        service.close()


@live
def test_get_order_service_is_cached_and_follows_settings(api_url: str) -> None:
    default = get_order_service()
    assert isinstance(default, DjangoOrderService)
    assert get_order_service() is default
    with override_settings(
        ORDER_SERVICE="chatbot.orders.backends.HttpOrderService",
        TIERDESK_ORDER_API_URL=api_url,
    ):
        http = get_order_service()
        assert isinstance(http, HttpOrderService)
        assert get_order_service() is http
        facts = http.order_get(customer_id=JAMES, order_id=JAMES_PROCESSED)
        assert facts is not None and facts.order_id == JAMES_PROCESSED
    assert isinstance(get_order_service(), DjangoOrderService)


JAMES_DELIVERED = "#W4435622"  # Hiking Boots + Water Bottle, bought 25 days before the seed


@live
def test_http_return_and_exchange(http: HttpOrderService) -> None:
    order = models.Order.objects.get(order_id=JAMES_DELIVERED)
    boots, bottle = (item["item_id"] for item in order.items)
    variants = http.item_variants(item_id=boots)
    assert variants and all(v.name == "Hiking Boots" and v.item_id != boots for v in variants)
    assert variants == DjangoOrderService().item_variants(item_id=boots)
    assert http.item_variants(item_id="0000000000") == []

    # Someone else's order, exactly like a missing one.
    with pytest.raises(OrderNotFound):
        http.request_return(customer_id=MOHAMED, order_id=JAMES_DELIVERED, item_ids=[boots])
    # Outside the window / not delivered: 409 with the reason's code.
    old = models.Order.objects.get(order_id=MOHAMED_DELIVERED)
    with pytest.raises(OrderNotAllowed) as caught:
        http.request_return(
            customer_id=MOHAMED, order_id=MOHAMED_DELIVERED, item_ids=[old.items[0]["item_id"]]
        )
    assert caught.value.code == "outside_return_window" and "return window" in str(caught.value)
    with pytest.raises(OrderNotAllowed) as caught:
        http.request_exchange(
            customer_id=JAMES, order_id=JAMES_PROCESSED, exchanges={"6469567736": boots}
        )
    assert caught.value.code == "not_delivered"
    # An exchange for another product is refused (400).
    with pytest.raises(OrderServiceError) as invalid:
        http.request_exchange(
            customer_id=JAMES, order_id=JAMES_DELIVERED, exchanges={boots: bottle}
        )
    assert invalid.value.code == "invalid_exchange"

    swapped = http.request_exchange(
        customer_id=JAMES, order_id=JAMES_DELIVERED, exchanges={boots: variants[0].item_id}
    )
    assert swapped.kind == "exchange" and swapped.created and swapped.status == "requested"
    (item,) = swapped.items
    assert item.new_item_id == variants[0].item_id and item.new_price == variants[0].price
    assert swapped.amount == variants[0].price - item.price
    # The same request again: the stored one (idempotent); a different one: refused.
    again = http.request_exchange(
        customer_id=JAMES, order_id=JAMES_DELIVERED, exchanges={boots: variants[0].item_id}
    )
    assert not again.created and again.amount == swapped.amount
    with pytest.raises(OrderNotAllowed) as caught:
        http.request_return(customer_id=JAMES, order_id=JAMES_DELIVERED, item_ids=[bottle])
    assert caught.value.code == "already_requested"
    assert models.ReturnRequest.objects.get().order.status == "exchange requested"
    after = http.order_get(customer_id=JAMES, order_id=JAMES_DELIVERED)
    assert after is not None and after.status == "exchange requested"
