from __future__ import annotations

import json
from datetime import date, timedelta

import pytest

from chatbot.orders import models
from chatbot.orders.seed import (
    CARRIERS,
    LATE_ORDERS,
    VIP_MIN_ORDERS,
    default_data_dir,
    order_derived_fields,
    shop_redate,
    shop_seed,
)

from .conftest import JAMES, JAMES_PROCESSED, MOHAMED_PENDING


@pytest.mark.django_db
def test_seed_loads_everything_once_keeps_demo_changes_and_derives() -> None:
    assert shop_seed() == {"customers": 500, "orders": 1000, "products": 50, "shipping_options": 2}
    models.Order.objects.filter(order_id=MOHAMED_PENDING).update(status="cancelled")

    assert shop_seed() == {"customers": 0, "orders": 0, "products": 0, "shipping_options": 0}

    assert models.Customer.objects.count() == 500
    assert models.Order.objects.count() == 1000
    # A re-run inserts what is missing; it does not undo what happened in the demo.
    assert models.Order.objects.get(order_id=MOHAMED_PENDING).status == "cancelled"

    # The source records are kept as they are; dates, carriers and VIP are derived.
    users = json.loads((default_data_dir() / "users.json").read_text())
    order = models.Order.objects.select_related("customer").get(order_id=JAMES_PROCESSED)
    assert order.customer.customer_id == JAMES
    assert [i["item_id"] for i in order.items] == ["6469567736", "8426249116"]
    assert order.fulfillments[0]["tracking_id"] == ["357962501027"]
    assert order.carrier in CARRIERS

    vips = set(models.Customer.objects.filter(vip=True).values_list("customer_id", flat=True))
    expected = {cid for cid, u in users.items() if len(u["orders"]) >= VIP_MIN_ORDERS}
    assert vips == expected
    assert 0 < len(vips) < 100


def test_derived_fields_are_deterministic_and_in_documented_ranges() -> None:
    today = date(2026, 12, 1)
    seen_carriers = set()
    seen_days = set()
    in_window = 0
    for n in range(400):
        order_id = f"#W{1000000 + n * 7919}"
        fields = order_derived_fields(
            order_id=order_id, status="delivered", has_tracking=True, today=today
        )
        assert fields == order_derived_fields(
            order_id=order_id, status="delivered", has_tracking=True, today=today
        )
        placed = fields["placed_on"]
        assert today - timedelta(days=60) <= placed <= today - timedelta(days=8)
        delivery_days = (fields["estimated_delivery"] - placed).days
        assert 3 <= delivery_days <= 7 and fields["estimated_delivery"] < today
        in_window += placed >= today - timedelta(days=30)
        seen_days.add(delivery_days)
        seen_carriers.add(fields["carrier"])
        # In transit or pending: due in the future (on time), unless one of the late ones.
        for status in ("processed", "pending"):
            open_order = order_derived_fields(
                order_id=order_id, status=status, has_tracking=True, today=today
            )
            assert open_order["estimated_delivery"] >= today
    assert seen_carriers == set(CARRIERS)
    assert seen_days == {3, 4, 5, 6, 7}
    # Recently delivered orders inside the 30-day return window, and older ones.
    assert 100 < in_window < 300

    for late in LATE_ORDERS:
        fields = order_derived_fields(order_id=late, status="processed", has_tracking=True)
        assert fields["estimated_delivery"] < fields["placed_on"] + timedelta(days=8)
        assert fields["estimated_delivery"] < date.today()

    pending = order_derived_fields(order_id="#W1234567", status="pending", has_tracking=False)
    assert pending["carrier"] == ""
    assert pending["estimated_delivery"] is not None
    cancelled = order_derived_fields(order_id="#W1234567", status="cancelled", has_tracking=True)
    assert cancelled["estimated_delivery"] is None


@pytest.mark.django_db
def test_redate_moves_the_dates_to_a_new_today_and_nothing_else(shop: object) -> None:
    before = {o.order_id: (o.status, o.items, o.placed_on) for o in models.Order.objects.all()}
    later = date(2027, 3, 1)
    assert shop_redate(today=later) == len(before)
    for order in models.Order.objects.all():
        status, items, placed_on = before[order.order_id]
        assert (order.status, order.items) == (status, items)
        has_tracking = any(f.get("tracking_id") for f in order.fulfillments)
        fields = order_derived_fields(
            order_id=order.order_id, status=status, has_tracking=has_tracking, today=later
        )
        assert order.placed_on == fields["placed_on"] != placed_on
        assert order.estimated_delivery == fields["estimated_delivery"]
