"""Deterministic code performs the action the shopper confirmed (cancel, new address,
return, exchange); the model never decides or performs one."""

from __future__ import annotations

from typing import Any

from chatbot.orders.types import Address, OrderNotAllowed, OrderNotFound
from routing import types as rt

from ..base import AnswerPlan, TurnContext, say
from ..order_format import order_facts
from .returns import return_perform


def action_perform(ctx: TurnContext, action: dict[str, Any]) -> AnswerPlan:
    """Deterministic code performs the confirmed action; the model is not involved."""
    if action["type"] in ("return", "exchange"):
        return return_perform(ctx, action)
    service = ctx.orders()
    customer_id, order_id = ctx.customer_id, str(action["order_id"])
    intent = rt.CANCEL_ORDER if action["type"] == "cancel" else rt.CHANGE_ADDRESS
    try:
        if action["type"] == "cancel":
            # The reason the shopper gave (cancel_confirm); never assumed.
            order = service.order_cancel(
                customer_id=customer_id, order_id=order_id, reason=str(action.get("reason", ""))
            )
        else:
            order = service.order_change_address(
                customer_id=customer_id, order_id=order_id, address=Address(**action["address"])
            )
    except OrderNotFound:
        return say(ctx, "dialogue", "order_not_found", {"order_id": order_id}, label=intent)
    except OrderNotAllowed:
        order_now = service.order_get(customer_id=customer_id, order_id=order_id)
        facts = order_facts(order_now, ctx.language) if order_now else {"order_id": order_id}
        return say(ctx, intent, "not_allowed", facts, personal=True)
    plan = say(ctx, intent, "done", order_facts(order, ctx.language), personal=True)
    plan.actions = ["performed:" + action["type"]]
    return plan
