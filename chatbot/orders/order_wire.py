"""JSON shapes of the order API (docs/order-api.md), both directions.

The reference API (api.py) writes them and ``HttpOrderService`` reads them, so the
two cannot drift apart. Money travels as strings ("47.84"): a JSON float would turn
amounts into binary fractions on the way.
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any

from .types import Address, Customer, OrderFacts, OrderItem, ReturnFacts, ReturnItem, ShippingOption


class WireError(ValueError):
    """A response body does not have the documented shape."""


def customer_to_json(customer: Customer) -> dict[str, Any]:
    return asdict(customer)


def address_to_json(address: Address) -> dict[str, Any]:
    return asdict(address)


def order_to_json(order: OrderFacts) -> dict[str, Any]:
    return {
        "order_id": order.order_id,
        "status": order.status,
        "items": [item_to_json(item) for item in order.items],
        "total": str(order.total),
        "address": address_to_json(order.address),
        "placed_on": order.placed_on.isoformat(),
        "estimated_delivery": (
            order.estimated_delivery.isoformat() if order.estimated_delivery else None
        ),
        "carrier": order.carrier,
        "tracking_ids": list(order.tracking_ids),
        "refunds": [str(amount) for amount in order.refunds],
        "payment_method": order.payment_method,
    }


def item_to_json(item: OrderItem) -> dict[str, Any]:
    return {
        "item_id": item.item_id,
        "name": item.name,
        "price": str(item.price),
        "options": dict(item.options),
    }


def return_to_json(facts: ReturnFacts) -> dict[str, Any]:
    return {
        "order_id": facts.order_id,
        "kind": facts.kind,
        "status": facts.status,
        "items": [
            {
                "item_id": item.item_id,
                "name": item.name,
                "price": str(item.price),
                "options": dict(item.options),
                "new_item_id": item.new_item_id,
                "new_options": dict(item.new_options),
                "new_price": None if item.new_price is None else str(item.new_price),
            }
            for item in facts.items
        ],
        "amount": str(facts.amount),
        "payment_method": facts.payment_method,
        "created": facts.created,
    }


def shipping_option_to_json(option: ShippingOption) -> dict[str, Any]:
    return {
        "name": option.name,
        "price": str(option.price),
        "days_min": option.days_min,
        "days_max": option.days_max,
        "free_over": str(option.free_over) if option.free_over is not None else None,
    }


# --- reading ------------------------------------------------------------------------------------


def _str(data: dict[str, Any], key: str, *, default: str | None = None) -> str:
    value = data.get(key, default)
    if not isinstance(value, str):
        raise WireError(f"{key}: expected a string")
    return value


def _int(data: dict[str, Any], key: str) -> int:
    value = data.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise WireError(f"{key}: expected an integer")
    return value


def _money(value: Any, key: str) -> Decimal:
    if not isinstance(value, str | int):
        raise WireError(f"{key}: expected a decimal string")
    try:
        return Decimal(str(value))
    except InvalidOperation as exc:
        raise WireError(f"{key}: not a decimal: {value!r}") from exc


def _date(value: Any, key: str) -> date:
    try:
        return date.fromisoformat(value)
    except (TypeError, ValueError) as exc:
        raise WireError(f"{key}: expected an ISO date") from exc


def _object(value: Any, key: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise WireError(f"{key}: expected an object")
    return value


def _list(value: Any, key: str) -> list[Any]:
    if not isinstance(value, list):
        raise WireError(f"{key}: expected a list")
    return value


def customer_from_json(data: Any) -> Customer:
    data = _object(data, "customer")
    vip = data.get("vip", False)
    if not isinstance(vip, bool):
        raise WireError("vip: expected a boolean")
    return Customer(
        customer_id=_str(data, "customer_id"),
        first_name=_str(data, "first_name"),
        last_name=_str(data, "last_name"),
        email=_str(data, "email"),
        zip=_str(data, "zip"),
        vip=vip,
    )


def address_from_json(data: Any) -> Address:
    data = _object(data, "address")
    return Address(
        address1=_str(data, "address1"),
        address2=_str(data, "address2", default=""),
        city=_str(data, "city"),
        state=_str(data, "state"),
        zip=_str(data, "zip"),
        country=_str(data, "country", default="USA"),
    )


def item_from_json(raw: Any) -> OrderItem:
    item = _object(raw, "items[]")
    options = _object(item.get("options", {}), "options")
    return OrderItem(
        item_id=_str(item, "item_id"),
        name=_str(item, "name"),
        price=_money(item.get("price"), "price"),
        options={str(k): str(v) for k, v in options.items()},
    )


def return_from_json(data: Any) -> ReturnFacts:
    data = _object(data, "return")
    items = []
    for raw in _list(data.get("items"), "items"):
        item = _object(raw, "items[]")
        base = item_from_json(item)
        new_options = _object(item.get("new_options", {}), "new_options")
        new_price = item.get("new_price")
        items.append(
            ReturnItem(
                item_id=base.item_id,
                name=base.name,
                price=base.price,
                options=base.options,
                new_item_id=_str(item, "new_item_id", default=""),
                new_options={str(k): str(v) for k, v in new_options.items()},
                new_price=None if new_price is None else _money(new_price, "new_price"),
            )
        )
    created = data.get("created", True)
    if not isinstance(created, bool):
        raise WireError("created: expected a boolean")
    return ReturnFacts(
        order_id=_str(data, "order_id"),
        kind=_str(data, "kind"),
        status=_str(data, "status"),
        items=tuple(items),
        amount=_money(data.get("amount"), "amount"),
        payment_method=_str(data, "payment_method", default=""),
        created=created,
    )


def order_from_json(data: Any) -> OrderFacts:
    data = _object(data, "order")
    items = [item_from_json(raw) for raw in _list(data.get("items"), "items")]
    estimated = data.get("estimated_delivery")
    return OrderFacts(
        order_id=_str(data, "order_id"),
        status=_str(data, "status"),
        items=tuple(items),
        total=_money(data.get("total"), "total"),
        address=address_from_json(data.get("address")),
        placed_on=_date(data.get("placed_on"), "placed_on"),
        estimated_delivery=None if estimated is None else _date(estimated, "estimated_delivery"),
        carrier=_str(data, "carrier", default=""),
        tracking_ids=tuple(str(t) for t in _list(data.get("tracking_ids", []), "tracking_ids")),
        refunds=tuple(_money(r, "refunds[]") for r in _list(data.get("refunds", []), "refunds")),
        payment_method=_str(data, "payment_method", default=""),
    )


def shipping_option_from_json(data: Any) -> ShippingOption:
    data = _object(data, "shipping_option")
    free_over = data.get("free_over")
    return ShippingOption(
        name=_str(data, "name"),
        price=_money(data.get("price"), "price"),
        days_min=_int(data, "days_min"),
        days_max=_int(data, "days_max"),
        free_over=None if free_over is None else _money(free_over, "free_over"),
    )


def catalogue_product_to_json(
    *, product_id: str, name: str, variants: dict[str, Any], category: str = ""
) -> dict[str, Any]:
    """A demo shop product (the tau-bench shape: ``{item_id: {"options", "price",
    "available"}}``) as the catalogue's Product object (docs/order-api.md, Catalogue);
    shop/catalogue_schema.py reads it back."""
    return {
        "product_id": product_id,
        "name": name,
        "category": category,
        "description": "",
        "variants": [
            {
                "sku": str(sku),
                "options": {str(k): str(v) for k, v in (v.get("options") or {}).items()},
                "price": str(Decimal(str(v.get("price", 0))).quantize(Decimal("0.01"))),
                "available": bool(v.get("available", False)),
            }
            for sku, v in variants.items()
        ],
    }
