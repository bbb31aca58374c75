"""Which orders each order action can be done to, by the store policy: a cancel or a
new address only while the order is pending, a return or an exchange only once it is
delivered and within the return window (chatbot/orders/policy.py). The flows refuse
any other order with the reason; the "which order?" question offers only these."""

from __future__ import annotations

from datetime import date

from django.utils import timezone

from chatbot.orders.policy import within_return_window
from chatbot.orders.types import OrderFacts
from routing import types as rt

RETURN_INTENTS = (rt.RETURN_ITEM, rt.EXCHANGE_ITEM)

# The statuses each action allows; an intent not here (status, delivery time, refund)
# only reads the order, whatever its status.
ACTION_STATUSES: dict[str, tuple[str, ...]] = {
    rt.CANCEL_ORDER: ("pending",),
    rt.CHANGE_ADDRESS: ("pending",),
    rt.RETURN_ITEM: ("delivered",),
    rt.EXCHANGE_ITEM: ("delivered",),
}


def status_allows(intent: str, order: OrderFacts) -> bool:
    """The order's status allows the action (every status, for a read-only intent)."""
    statuses = ACTION_STATUSES.get(intent)
    return statuses is None or order.status in statuses


def in_return_window(order: OrderFacts, today: date | None = None) -> bool:
    """At least one of the order's items can still be returned."""
    today = today or timezone.localdate()
    return any(within_return_window(order.placed_on, today, [i.name]) for i in order.items)


def order_allows(intent: str, order: OrderFacts, today: date | None = None) -> bool:
    """The action can be done to the order now: its status, and for a return or an
    exchange the return window."""
    if not status_allows(intent, order):
        return False
    return intent not in RETURN_INTENTS or in_return_window(order, today)
