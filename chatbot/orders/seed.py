"""Load the demo shop from the tau-bench retail data (third_party/tau_bench_retail/).

Derived demo data: the source has no order dates, no carriers and no VIP flag.
They are derived deterministically from a SHA-256 hash of the order id, relative to
the day the shop is seeded (``today``), so that a fresh demo shop looks like a live
one whatever the date: status answers say "on its way", not "late", and recently
delivered orders are inside the return window (chatbot/orders/policy.py).

- ``placed_on`` by status: pending 0 to 1 days ago; processed (in transit) 1 to 3
  days ago; delivered 8 to 60 days ago (so about 40% were bought within the
  30-day return window); cancelled 1 to 60 days ago;
- ``estimated_delivery``: ``placed_on`` + 3 to 7 days (same hash): in the future for
  pending and processed orders, in the past for delivered ones; none for a
  cancelled order;
- ``LATE_ORDERS``: the demo's late orders, placed 10 to 14 days ago and still not
  delivered (their estimated date has passed);
- ``carrier``: one of UPS, FedEx, USPS, DHL (same hash) for orders that have a
  tracking id; empty otherwise (pending orders have not shipped);
- ``vip``: customers with ``VIP_MIN_ORDERS`` or more orders.

The seed inserts only missing rows, so reseeding never moves the date of an order
that exists; ``manage.py seed_demo --redate`` (``shop_redate``) moves every order's
dates to today's reference without touching anything else.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from . import models, order_wire

# The demo's late orders: past their estimated delivery and not delivered (James's
# shipped order and Mei's pending one; tests and the docs quote them).
LATE_ORDERS = frozenset({"#W2611340", "#W9583042"})
CARRIERS = ("UPS", "FedEx", "USPS", "DHL")
VIP_MIN_ORDERS = 5
_BATCH = 500


@dataclass(frozen=True)
class _ShippingDefault:
    name: str
    price: Decimal
    days_min: int
    days_max: int
    free_over: Decimal | None


DEFAULT_SHIPPING_OPTIONS = (
    _ShippingDefault("Standard", Decimal("5.99"), 3, 7, Decimal("50.00")),
    _ShippingDefault("Express", Decimal("14.99"), 1, 2, None),
)


def default_data_dir() -> Path:
    return Path(settings.BASE_DIR) / "third_party" / "tau_bench_retail"


def order_derived_fields(
    *, order_id: str, status: str, has_tracking: bool, today: date | None = None
) -> dict[str, Any]:
    """placed_on, estimated_delivery and carrier for one order (module docstring)."""
    today = today or timezone.localdate()
    digest = int.from_bytes(hashlib.sha256(order_id.encode()).digest()[:8], "big")
    if order_id in LATE_ORDERS and status in ("pending", "processed"):
        days_ago = 10 + digest % 5
    elif status == models.Order.Status.PENDING:
        days_ago = digest % 2
    elif status == models.Order.Status.PROCESSED:
        days_ago = 1 + digest % 3
    elif status == models.Order.Status.CANCELLED:
        days_ago = 1 + digest % 60
    else:  # delivered (and anything after delivery: a requested return or exchange)
        days_ago = 8 + digest % 53
    placed_on = today - timedelta(days=days_ago)
    delivery_days = 3 + (digest >> 8) % 5
    cancelled = status == models.Order.Status.CANCELLED
    return {
        "placed_on": placed_on,
        "estimated_delivery": None if cancelled else placed_on + timedelta(days=delivery_days),
        "carrier": CARRIERS[(digest >> 16) % len(CARRIERS)] if has_tracking else "",
    }


def shop_redate(*, today: date | None = None) -> int:
    """Move every order's dates to ``today``'s reference (module docstring); the
    status, items and payments stay as they are. Returns how many orders moved."""
    orders = list(models.Order.objects.all())
    for order in orders:
        fields = order_derived_fields(
            order_id=order.order_id,
            status=order.status,
            has_tracking=any(f.get("tracking_id") for f in order.fulfillments),
            today=today,
        )
        order.placed_on = fields["placed_on"]
        order.estimated_delivery = fields["estimated_delivery"]
    models.Order.objects.bulk_update(orders, ["placed_on", "estimated_delivery"], batch_size=_BATCH)
    return len(orders)


def _load(data_dir: Path, name: str) -> dict[str, Any]:
    with (data_dir / name).open(encoding="utf-8") as handle:
        data = json.load(handle)
    if not isinstance(data, dict):
        raise ValueError(f"{data_dir / name}: expected a JSON object")
    return data


def shop_seed(*, data_dir: Path | None = None) -> dict[str, int]:
    """Insert the demo shop's rows that are missing; return how many of each were inserted.

    Idempotent: rows that exist (by customer_id, order_id, product_id, shipping option
    name) are left alone, so a re-run inserts nothing and never undoes a cancellation
    made in the demo. Everything goes in with a few bulk inserts in one transaction.
    """
    data_dir = data_dir or default_data_dir()
    users = _load(data_dir, "users.json")
    orders = _load(data_dir, "orders.json")
    products = _load(data_dir, "products.json")

    with transaction.atomic():
        before = {
            "customers": models.Customer.objects.count(),
            "orders": models.Order.objects.count(),
            "products": models.Product.objects.count(),
            "shipping_options": models.ShippingOption.objects.count(),
        }
        _customers_insert(users)
        _orders_insert(orders)
        _products_insert(products)
        _shipping_options_insert()
        return {
            "customers": models.Customer.objects.count() - before["customers"],
            "orders": models.Order.objects.count() - before["orders"],
            "products": models.Product.objects.count() - before["products"],
            "shipping_options": models.ShippingOption.objects.count() - before["shipping_options"],
        }


def _customers_insert(users: dict[str, Any]) -> None:
    existing = set(models.Customer.objects.values_list("customer_id", flat=True))
    models.Customer.objects.bulk_create(
        [
            models.Customer(
                customer_id=customer_id,
                first_name=user["name"]["first_name"],
                last_name=user["name"]["last_name"],
                email=user["email"].strip().lower(),
                zip=user["address"]["zip"],
                address=user["address"],
                payment_methods=user["payment_methods"],
                vip=len(user.get("orders", [])) >= VIP_MIN_ORDERS,
            )
            for customer_id, user in users.items()
            if customer_id not in existing
        ],
        batch_size=_BATCH,
        # A concurrent seed (two processes starting at once) may insert the same
        # rows first; skipping them is the idempotent answer.
        ignore_conflicts=True,
    )


def _orders_insert(orders: dict[str, Any]) -> None:
    customer_pks = dict(models.Customer.objects.values_list("customer_id", "pk"))
    existing = set(models.Order.objects.values_list("order_id", flat=True))
    models.Order.objects.bulk_create(
        [
            models.Order(
                order_id=order_id,
                customer_id=customer_pks[order["user_id"]],
                status=order["status"],
                address=order["address"],
                items=order["items"],
                fulfillments=order["fulfillments"],
                payment_history=order["payment_history"],
                **order_derived_fields(
                    order_id=order_id,
                    status=order["status"],
                    has_tracking=any(f.get("tracking_id") for f in order["fulfillments"]),
                ),
            )
            for order_id, order in orders.items()
            if order_id not in existing and order["user_id"] in customer_pks
        ],
        batch_size=_BATCH,
        ignore_conflicts=True,
    )


def _products_insert(products: dict[str, Any]) -> None:
    existing = set(models.Product.objects.values_list("product_id", flat=True))
    models.Product.objects.bulk_create(
        [
            models.Product(product_id=product_id, name=p["name"], variants=p["variants"])
            for product_id, p in products.items()
            if product_id not in existing
        ],
        batch_size=_BATCH,
        ignore_conflicts=True,
    )


def _shipping_options_insert() -> None:
    existing = set(models.ShippingOption.objects.values_list("name", flat=True))
    models.ShippingOption.objects.bulk_create(
        [
            models.ShippingOption(
                name=option.name,
                price=option.price,
                days_min=option.days_min,
                days_max=option.days_max,
                free_over=option.free_over,
                position=position,
            )
            for position, option in enumerate(DEFAULT_SHIPPING_OPTIONS)
            if option.name not in existing
        ],
        ignore_conflicts=True,
    )


def catalogue_seed(*, data_dir: Path | None = None) -> dict[str, int]:
    """The demo's products (tau-bench ``products.json``) into the shop's catalogue,
    through the same import a shop's file goes through (shop/catalogue_import.py),
    with the categories the shop profile names. Only into an empty catalogue: a re-run
    must not put the demo's values back over what support admins edited."""
    from shop.catalogue import profile_category
    from shop.catalogue_import import catalogue_import_json
    from shop.models import Product as CatalogueProduct

    if CatalogueProduct.objects.exists():
        return {"products_created": 0}
    products = _load(data_dir or default_data_dir(), "products.json")
    document = {
        "products": [
            order_wire.catalogue_product_to_json(
                product_id=product_id,
                name=p["name"],
                variants=p["variants"],
                category=profile_category(p["name"]),
            )
            for product_id, p in products.items()
        ]
    }
    result = catalogue_import_json(document)
    if not result.ok:
        raise ValueError(f"demo catalogue: {result.errors[0]}")
    return {"products_created": result.products_created, "variants": result.variants_created}
