"""A change the order's status doesn't allow (cancel, a new address), refused with what
the shopper can do instead offered in the same reply."""

from __future__ import annotations

from chatbot.orders.types import OrderFacts

from ..base import AnswerPlan, TurnContext, say

# The statuses with a refusal of their own, which offers what can be done instead
# (``offers.TEMPLATE_OFFERS``): where a shipped order is now; for a delivered one, a
# return instead of a cancel, a person for its address. Any other status (cancelled)
# gets the plain refusal.
_OWN_REFUSAL = ("processed", "delivered")


def refuse(ctx: TurnContext, intent: str, order: OrderFacts, facts: dict[str, str]) -> AnswerPlan:
    """Cancel or change of address refused by the order's status, with what the shopper
    can do instead offered in the same reply (the dialogue remembers the offer)."""
    key = f"not_allowed_{order.status}" if order.status in _OWN_REFUSAL else "not_allowed"
    return say(ctx, intent, key, facts, personal=True)
