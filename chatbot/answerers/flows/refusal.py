"""A change the order's status doesn't allow (cancel, a new address), refused with what
the shopper can do instead offered in the same reply."""

from __future__ import annotations

from chatbot.orders.types import OrderFacts
from routing import types as rt

from ..base import AnswerPlan, TurnContext, say
from ..offers import OFFER_HUMAN, OFFER_RETURN, OFFER_STATUS


def refuse(ctx: TurnContext, intent: str, order: OrderFacts, facts: dict[str, str]) -> AnswerPlan:
    """Cancel or change of address refused by the order's status, with what the shopper
    can do instead offered in the same reply: where a shipped order is now, a return of
    a delivered one (a person for its address), nothing for a cancelled one."""
    offers = {"processed": OFFER_STATUS, "delivered": OFFER_HUMAN}
    if intent == rt.CANCEL_ORDER:
        # A delivered order can't be cancelled, but its items can be returned: a "yes"
        # starts the return (the dialogue remembers the offer).
        offers["delivered"] = OFFER_RETURN
    offer = offers.get(order.status)
    key = f"not_allowed_{order.status}" if offer else "not_allowed"
    plan = say(ctx, intent, key, facts, personal=True)
    if offer:
        plan.actions = [offer]
    return plan
