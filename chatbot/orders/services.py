"""Writes to the demo shop's orders: cancel and change address (pending orders only),
return and exchange (delivered orders only, within the return window: policy.py).

These run as deterministic code after the shopper has explicitly confirmed; no model
decides or performs them. Each one locks the order row (``select_for_update``) inside
a transaction, so two confirmations racing on the same order cannot both pass the
status check (a double refund, or a cancelled order whose address still changes).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict
from decimal import Decimal

from django.db import transaction
from django.utils import timezone

from routing.order_ids import order_id_normalize

from . import models, policy
from .selectors import (
    money,
    order_payment_method_id,
    order_to_facts,
    payment_method_kind,
    product_variants_for_item,
)
from .types import (
    Address,
    OrderFacts,
    OrderNotAllowed,
    OrderNotFound,
    OrderServiceError,
    ReturnFacts,
    ReturnItem,
)

_REASON_MAX = models.Order._meta.get_field("cancel_reason").max_length or 200
_ADDRESS_FIELD_MAX = 128

# Why each non-pending status can't be changed, in words a shopper understands.
_NOT_PENDING_WHY: dict[str, str] = {
    models.Order.Status.PROCESSED: "it has already been processed for shipping",
    models.Order.Status.DELIVERED: "it has already been delivered (a return is possible instead)",
    models.Order.Status.CANCELLED: "it is already cancelled",
}


def _locked_order(*, customer_id: str, order_id: str) -> models.Order:
    canonical = order_id_normalize(order_id)
    if canonical is None:
        raise OrderNotFound(order_id)
    # of=("self",): lock only the order row, not the customer row the join touches,
    # so writes to different orders of one customer don't serialise.
    order = (
        models.Order.objects.select_for_update(of=("self",))
        .filter(order_id=canonical, customer__customer_id=customer_id)
        .first()
    )
    if order is None:
        # Same exception whether the order is missing or someone else's.
        raise OrderNotFound(canonical)
    return order


def _require_pending(order: models.Order, *, action: str) -> None:
    if order.status != models.Order.Status.PENDING:
        why = _NOT_PENDING_WHY.get(order.status, f"its status is {order.status}")
        raise OrderNotAllowed(
            "order_not_allowed",
            f"Order {order.order_id} can't be {action}: {why}. "
            f"Only pending orders can be {action}.",
        )


def order_cancel(*, customer_id: str, order_id: str, reason: str) -> OrderFacts:
    """Cancel a pending order and record the refund of everything paid.

    The refund goes to the original payment method; when it arrives is the shop
    profile's ``refund_timing`` (``selectors.refund_eta``).
    """
    with transaction.atomic():
        order = _locked_order(customer_id=customer_id, order_id=order_id)
        _require_pending(order, action="cancelled")
        paid = sum(
            (
                money(e.get("amount", 0)) * (1 if e.get("transaction_type") == "payment" else -1)
                for e in order.payment_history
                if e.get("transaction_type") in {"payment", "refund"}
            ),
            Decimal("0.00"),
        )
        order.status = models.Order.Status.CANCELLED
        order.cancel_reason = reason.strip()[:_REASON_MAX]
        if paid > 0:
            order.payment_history = [
                *order.payment_history,
                {
                    "transaction_type": "refund",
                    # A JSON number, like the rest of the tau-bench history.
                    "amount": float(paid),
                    "payment_method_id": order_payment_method_id(order),
                },
            ]
        order.save(update_fields=["status", "cancel_reason", "payment_history", "updated_at"])
        return order_to_facts(order)


_US = frozenset({"", "US", "USA"})


def address_validate(address: Address) -> dict[str, str]:
    """The address as stored JSON, or OrderServiceError("invalid_address")."""
    data = {key: str(value).strip() for key, value in asdict(address).items()}
    # A state is part of a US address; most other countries' addresses have none.
    required = ("address1", "city", "zip") + (("state",) if data["country"] in _US else ())
    missing = [key for key in required if not data[key]]
    if missing:
        raise OrderServiceError("invalid_address", "The address is missing " + ", ".join(missing))
    too_long = [key for key, value in data.items() if len(value) > _ADDRESS_FIELD_MAX]
    if too_long:
        raise OrderServiceError("invalid_address", "Too long: " + ", ".join(too_long))
    data["country"] = data["country"] or "USA"
    return data


def order_change_address(*, customer_id: str, order_id: str, address: Address) -> OrderFacts:
    data = address_validate(address)
    with transaction.atomic():
        order = _locked_order(customer_id=customer_id, order_id=order_id)
        _require_pending(order, action="changed")
        order.address = data
        order.save(update_fields=["address", "updated_at"])
        return order_to_facts(order)


# --- returns and exchanges (store policy: policy.py) ----------------------------------------


def return_request_to_facts(request: models.ReturnRequest, *, created: bool) -> ReturnFacts:
    def new_price(item: dict) -> Decimal | None:
        return money(item["new_price"]) if item.get("new_price") is not None else None

    return ReturnFacts(
        order_id=request.order.order_id,
        kind=request.kind,
        status=request.status,
        items=tuple(
            ReturnItem(
                item_id=str(item["item_id"]),
                name=str(item.get("name", "")),
                price=money(item.get("price", 0)),
                options=dict(item.get("options") or {}),
                new_item_id=str(item.get("new_item_id", "")),
                new_options=dict(item.get("new_options") or {}),
                new_price=new_price(item),
            )
            for item in request.items
        ),
        amount=request.amount,
        payment_method=payment_method_kind(
            payment_method_id=request.payment_method_id,
            payment_methods=request.customer.payment_methods,
        ),
        created=created,
    )


def _repeat_or_refuse(order: models.Order, *, kind: str, items: list[dict]) -> ReturnFacts | None:
    """A request already stored for this order: the same one again (a repeated "yes")
    returns it unchanged; a different one is refused (one per order, wiki.md)."""
    existing = models.ReturnRequest.objects.filter(order=order).first()
    if existing is None:
        return None
    key = sorted((i["item_id"], i.get("new_item_id", "")) for i in items)
    same = existing.kind == kind and key == sorted(
        (i["item_id"], i.get("new_item_id", "")) for i in existing.items
    )
    if same:
        return return_request_to_facts(existing, created=False)
    raise OrderNotAllowed(
        "already_requested",
        f"A {existing.kind} was already requested for order {order.order_id}; "
        "only one return or exchange per order is possible.",
    )


def _require_returnable(order: models.Order, *, action: str, items: list[dict]) -> None:
    if order.status != models.Order.Status.DELIVERED:
        raise OrderNotAllowed(
            "not_delivered",
            f"Order {order.order_id} can't be {action}: it is {order.status}. "
            "Only delivered orders can be returned or exchanged.",
        )
    names = [str(item.get("name", "")) for item in items]
    deadline = policy.return_deadline(order.placed_on, names)
    if deadline is not None and timezone.localdate() > deadline:
        raise OrderNotAllowed(
            "outside_return_window",
            f"Order {order.order_id} can't be {action}: it was bought on "
            f"{order.placed_on.isoformat()}, more than "
            f"{policy.return_window_days(names)} days ago "
            f"(the return window ended on {deadline.isoformat()}).",
        )


def _picked_items(order: models.Order, item_ids: list[str]) -> list[dict]:
    """The order's items named by ``item_ids`` (an item bought twice may be named twice)."""
    if not item_ids:
        raise OrderServiceError("invalid_items", "Name at least one item of the order.")
    available = Counter(str(item.get("item_id")) for item in order.items)
    wanted = Counter(str(i) for i in item_ids)
    unknown = [i for i, n in wanted.items() if available[i] < n]
    if unknown:
        raise OrderServiceError(
            "invalid_items",
            f"Not items of order {order.order_id}: " + ", ".join(sorted(unknown)),
        )
    by_id = {str(item.get("item_id")): item for item in order.items}
    return [
        {
            "item_id": item_id,
            "name": str(by_id[item_id].get("name", "")),
            "price": float(money(by_id[item_id].get("price", 0))),
            "options": dict(by_id[item_id].get("options") or {}),
        }
        for item_id in item_ids
    ]


def _record(order: models.Order, *, kind: str, items: list[dict], amount: Decimal) -> ReturnFacts:
    request = models.ReturnRequest.objects.create(
        order=order,
        customer=order.customer,
        kind=kind,
        items=items,
        amount=amount,
        payment_method_id=order_payment_method_id(order),
    )
    order.status = (
        models.Order.Status.RETURN_REQUESTED
        if kind == models.ReturnRequest.Kind.RETURN
        else models.Order.Status.EXCHANGE_REQUESTED
    )
    order.save(update_fields=["status", "updated_at"])
    return return_request_to_facts(request, created=True)


def request_return(*, customer_id: str, order_id: str, item_ids: list[str]) -> ReturnFacts:
    """Request the return of items of a delivered order, refunded to the original
    payment method; the order becomes "return requested". Idempotent: the same
    request again returns the stored one (``created=False``)."""
    with transaction.atomic():
        order = _locked_order(customer_id=customer_id, order_id=order_id)
        items = _picked_items(order, [str(i) for i in item_ids])
        repeat = _repeat_or_refuse(order, kind=models.ReturnRequest.Kind.RETURN, items=items)
        if repeat is not None:
            return repeat
        _require_returnable(order, action="returned", items=items)
        amount = policy.refund_after_fee(
            sum((money(item["price"]) for item in items), Decimal("0.00"))
        )
        return _record(order, kind=models.ReturnRequest.Kind.RETURN, items=items, amount=amount)


def request_exchange(*, customer_id: str, order_id: str, exchanges: dict[str, str]) -> ReturnFacts:
    """Request the exchange of items of a delivered order for available items of the
    same product in other options; the price difference is paid or refunded with the
    original payment method. Idempotent like ``request_return``."""
    with transaction.atomic():
        order = _locked_order(customer_id=customer_id, order_id=order_id)
        items = _picked_items(order, [str(i) for i in exchanges])
        for item in items:
            item["new_item_id"] = str(exchanges[item["item_id"]])
        repeat = _repeat_or_refuse(order, kind=models.ReturnRequest.Kind.EXCHANGE, items=items)
        if repeat is not None:
            return repeat
        _require_returnable(order, action="exchanged", items=items)
        for item in items:
            variant = next(
                (
                    v
                    for v in product_variants_for_item(item_id=item["item_id"])
                    if v.item_id == item["new_item_id"]
                ),
                None,
            )
            if variant is None:
                raise OrderServiceError(
                    "invalid_exchange",
                    f"{item['name']} can only be exchanged for an available item of the same "
                    f"product in another option; {item['new_item_id']} is not one.",
                )
            item |= {"new_options": dict(variant.options), "new_price": float(variant.price)}
        amount = sum(
            (money(item["new_price"]) - money(item["price"]) for item in items), Decimal("0.00")
        )
        return _record(order, kind=models.ReturnRequest.Kind.EXCHANGE, items=items, amount=amount)
