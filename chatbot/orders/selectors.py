"""Reads of the demo shop's tables, returned as the contract's dataclasses (types.py).

Every order read is scoped by the verified ``customer_id`` in the query itself, so
an order that belongs to someone else is indistinguishable from one that does not
exist: both come back as ``None``.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from routing.order_ids import order_id_normalize
from shop.profile import shop_profile

from . import models
from .types import Address, Customer, OrderFacts, OrderItem, ShippingOption

CENT = Decimal("0.01")


def money(value: Any) -> Decimal:
    # The source JSON holds floats; going through str() keeps 47.84 as 47.84 instead
    # of 47.840000000000003410605131648480892181396484375.
    return Decimal(str(value)).quantize(CENT)


def customer_to_facts(customer: models.Customer) -> Customer:
    return Customer(
        customer_id=customer.customer_id,
        first_name=customer.first_name,
        last_name=customer.last_name,
        email=customer.email,
        zip=customer.zip,
        vip=customer.vip,
    )


def address_from_json(data: dict[str, Any]) -> Address:
    return Address(
        address1=str(data.get("address1", "")),
        address2=str(data.get("address2", "")),
        city=str(data.get("city", "")),
        state=str(data.get("state", "")),
        zip=str(data.get("zip", "")),
        country=str(data.get("country", "USA")),
    )


def payment_method_kind(*, payment_method_id: str, payment_methods: dict[str, Any]) -> str:
    """ "gift_card" / "credit_card" / "paypal" for a stored payment method id."""
    method = payment_methods.get(payment_method_id)
    if isinstance(method, dict) and method.get("source"):
        return str(method["source"])
    # Ids are "<source>_<number>" in the demo data: a method the customer has since
    # removed from their profile still has a readable kind.
    return payment_method_id.rsplit("_", 1)[0] if "_" in payment_method_id else payment_method_id


def order_payment_method_id(order: models.Order) -> str:
    for entry in order.payment_history:
        if entry.get("transaction_type") == "payment":
            return str(entry.get("payment_method_id", ""))
    return ""


def order_to_facts(order: models.Order) -> OrderFacts:
    items = tuple(
        OrderItem(
            item_id=str(item.get("item_id", "")),
            name=str(item.get("name", "")),
            price=money(item.get("price", 0)),
            options={str(k): str(v) for k, v in (item.get("options") or {}).items()},
        )
        for item in order.items
    )
    tracking_ids = tuple(
        str(tracking_id)
        for fulfillment in order.fulfillments
        for tracking_id in fulfillment.get("tracking_id", [])
    )
    refunds = tuple(
        money(entry.get("amount", 0))
        for entry in order.payment_history
        if entry.get("transaction_type") == "refund"
    )
    return OrderFacts(
        order_id=order.order_id,
        status=order.status,
        items=items,
        total=sum((item.price for item in items), Decimal("0.00")),
        address=address_from_json(order.address),
        placed_on=order.placed_on,
        estimated_delivery=order.estimated_delivery,
        carrier=order.carrier,
        tracking_ids=tracking_ids,
        refunds=refunds,
        payment_method=payment_method_kind(
            payment_method_id=order_payment_method_id(order),
            payment_methods=order.customer.payment_methods,
        ),
    )


def refund_eta(*, payment_method: str) -> str:
    """When a refund reaches the shopper, in English (shop profile)."""
    return shop_profile().refund_timing(payment_method, "en")


def _single(queryset: Any) -> Customer | None:
    # Two matches means the details do not identify one shopper: refuse rather than
    # pick one, since the caller uses the answer as proof of identity.
    found = list(queryset[:2])
    return customer_to_facts(found[0]) if len(found) == 1 else None


def customer_get(*, customer_id: str) -> Customer | None:
    return _single(models.Customer.objects.filter(customer_id=customer_id))


def customer_get_by_email(*, email: str) -> Customer | None:
    email = email.strip().lower()
    if not email:
        return None
    return _single(models.Customer.objects.filter(email=email))


def customer_get_by_name_zip(*, first_name: str, last_name: str, zip: str) -> Customer | None:
    if not (first_name.strip() and last_name.strip() and zip.strip()):
        return None
    return _single(
        models.Customer.objects.filter(
            zip=zip.strip(),
            first_name__iexact=first_name.strip(),
            last_name__iexact=last_name.strip(),
        )
    )


def customer_list_in_zip(*, zip: str) -> list[Customer]:
    if not zip.strip():
        return []
    return [customer_to_facts(c) for c in models.Customer.objects.filter(zip=zip.strip())]


def order_get(*, customer_id: str, order_id: str) -> OrderFacts | None:
    canonical = order_id_normalize(order_id)
    if canonical is None:
        return None
    order = (
        models.Order.objects.select_related("customer")
        .filter(order_id=canonical, customer__customer_id=customer_id)
        .first()
    )
    return order_to_facts(order) if order is not None else None


def order_list_for_customer(*, customer_id: str) -> list[OrderFacts]:
    orders = models.Order.objects.select_related("customer").filter(
        customer__customer_id=customer_id
    )
    return [order_to_facts(order) for order in orders]


def shipping_option_list() -> list[ShippingOption]:
    return [
        ShippingOption(
            name=option.name,
            price=option.price,
            days_min=option.days_min,
            days_max=option.days_max,
            free_over=option.free_over,
        )
        for option in models.ShippingOption.objects.all()
    ]


def product_variants_for_item(*, item_id: str) -> list[OrderItem]:
    """The available items of the same product as ``item_id``, in other options (what
    an exchange may swap it for, wiki.md); [] for an unknown item."""
    product = models.Product.objects.filter(variants__has_key=str(item_id)).first()
    if product is None:
        return []
    return [
        OrderItem(
            item_id=str(variant_id),
            name=product.name,
            price=money(variant.get("price", 0)),
            options={str(k): str(v) for k, v in (variant.get("options") or {}).items()},
        )
        for variant_id, variant in product.variants.items()
        if str(variant_id) != str(item_id) and variant.get("available")
    ]


def product_page(*, page: int, size: int) -> tuple[list[models.Product], bool]:
    """One page (1-based) of the demo shop's products by product id, and whether
    another follows."""
    start = (page - 1) * size
    rows = list(models.Product.objects.order_by("product_id")[start : start + size + 1])
    return rows[:size], len(rows) > size
