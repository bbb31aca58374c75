"""Writes to the demo shop's orders: cancel and change address, pending orders only.

These run as deterministic code after the shopper has explicitly confirmed; no model
decides or performs them. Each one locks the order row (``select_for_update``) inside
a transaction, so two confirmations racing on the same order cannot both pass the
status check (a double refund, or a cancelled order whose address still changes).
"""

from __future__ import annotations

from dataclasses import asdict
from decimal import Decimal

from django.db import transaction

from routing.order_ids import order_id_normalize

from . import models
from .selectors import money, order_payment_method_id, order_to_facts
from .types import Address, OrderFacts, OrderNotAllowed, OrderNotFound, OrderServiceError

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

    Store policy (wiki.md): the refund goes to the original payment method, at once
    for a gift card, otherwise in 5 to 7 business days; ``selectors.refund_eta``
    phrases that for the reply.
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


def address_validate(address: Address) -> dict[str, str]:
    """The address as stored JSON, or OrderServiceError("invalid_address")."""
    data = {key: str(value).strip() for key, value in asdict(address).items()}
    missing = [key for key in ("address1", "city", "state", "zip") if not data[key]]
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
