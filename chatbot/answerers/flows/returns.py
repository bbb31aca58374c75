"""The returns flow, which an exchange starts with too (store policy:
chatbot/orders/policy.py): a delivered order within the return window, the items, then
for a return its confirmation (an exchange goes on in ``flows.exchange``).
``return_perform`` requests the confirmed return or exchange."""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

from chatbot.orders.policy import refund_after_fee
from chatbot.orders.types import (
    OrderFacts,
    OrderItem,
    OrderNotFound,
    OrderServiceError,
    ReturnFacts,
)
from routing import types as rt

from ..base import AnswerPlan, TurnContext, say, template_text
from ..order_format import (
    OPEN_STATUSES,
    PAYMENT_TEXT,
    display_id,
    fmt_money,
    item_line,
    numbered_list,
    refund_timing,
    reply_language,
    returns_facts,
)
from .eligible import in_return_window, status_allows
from .exchange import exchange_ask_next
from .item_choice import items_in_text


def return_start(ctx: TurnContext, intent: str, order_id: str) -> AnswerPlan:
    """Start a return or exchange of the chosen order (only the verified shopper's,
    through the order service; ``order_pick`` chose it when the message named none):
    check it against the policy, then list its items and ask which ones."""
    service, state = ctx.orders(), ctx.state
    order = service.order_get(customer_id=ctx.customer_id, order_id=order_id)
    if order is None:
        return say(
            ctx, "dialogue", "order_not_found", {"order_id": display_id(order_id)}, label=intent
        )
    state["last_order_id"] = order.order_id
    facts = returns_facts(ctx, order)
    refusal = _return_refusal(intent, order)
    if refusal:
        return say(ctx, intent, refusal, facts, personal=True)
    items = list(order.items)
    picked = items_in_text(ctx.text, items, numbers=False)
    if len(items) == 1:
        picked = items
    if picked:
        return return_items_chosen(ctx, intent, order, picked)
    state.update(
        awaiting="return_items",
        return_flow={"intent": intent, "order_id": order.order_id, "at": time.time()},
    )
    listing = numbered_list([item_line(item) for item in items], ctx.language)
    plan = say(ctx, intent, "ask_items", facts | {"item_list": listing}, personal=True)
    plan.choices = item_choices(ctx, items)
    return plan


def item_choices(ctx: TurnContext, items: list[OrderItem]) -> list[str]:
    """The "which items?" buttons: each item by name, then all of them."""
    return [item.name for item in items] + [template_text(ctx, "dialogue", "choice_all")]


def _return_refusal(intent: str, order: OrderFacts) -> str:
    """The template key saying why this order can't be returned now, or ""."""
    if order.status in ("return requested", "exchange requested"):
        return "already"
    if not status_allows(intent, order):
        return f"not_delivered_{order.status}" if order.status in OPEN_STATUSES else "not_delivered"
    if not in_return_window(order):
        return "outside_window"
    return ""


def return_items_chosen(
    ctx: TurnContext, intent: str, order: OrderFacts, items: list[OrderItem]
) -> AnswerPlan:
    """The items are known: a return goes to its confirmation; an exchange asks what
    each item should be swapped for."""
    if intent == rt.RETURN_ITEM:
        return return_confirm(ctx, order, items)
    ctx.state["exchange_flow"] = {
        "order_id": order.order_id,
        "item_ids": [item.item_id for item in items],
        "chosen": {},
        "at": time.time(),
    }
    return exchange_ask_next(ctx, order)


def return_confirm(ctx: TurnContext, order: OrderFacts, items: list[OrderItem]) -> AnswerPlan:
    """List the return with the policy's conditions; deterministic code performs it
    after an explicit yes."""
    amount = refund_after_fee(sum((item.price for item in items), Decimal("0.00")))
    facts = returns_facts(ctx, order, items) | {
        "items": ", ".join(item_line(item) for item in items),
        "amount": fmt_money(amount),
    }
    ctx.state["pending_action"] = {
        "type": "return",
        "order_id": order.order_id,
        "item_ids": [item.item_id for item in items],
        "at": time.time(),
    }
    return say(ctx, rt.RETURN_ITEM, "confirm", facts, actions=["confirm"], personal=True)


def return_items_given(ctx: TurnContext) -> AnswerPlan | None:
    """The shopper's answer to "which items?"; None when it names none of them."""
    flow = ctx.state.get("return_flow") or {}
    intent = str(flow.get("intent", rt.RETURN_ITEM))
    order = ctx.orders().order_get(customer_id=ctx.customer_id, order_id=flow.get("order_id", ""))
    if order is None:
        return say(
            ctx,
            "dialogue",
            "order_not_found",
            {"order_id": str(flow.get("order_id", ""))},
            label=intent,
        )
    picked = items_in_text(ctx.text, list(order.items))
    if not picked:
        return None
    return return_items_chosen(ctx, intent, order, picked)


# Why the order system refused, by its stable code (docs/order-api.md): the template.
_REFUSAL_KEYS = {
    "not_delivered": "not_delivered",
    "outside_return_window": "outside_window",
    "already_requested": "already",
}


def return_perform(ctx: TurnContext, action: dict[str, Any]) -> AnswerPlan:
    """Deterministic code requests the confirmed return or exchange; no model."""
    service = ctx.orders()
    customer_id, order_id = ctx.customer_id, str(action["order_id"])
    exchange = action["type"] == "exchange"
    intent = rt.EXCHANGE_ITEM if exchange else rt.RETURN_ITEM
    try:
        if exchange:
            result = service.request_exchange(
                customer_id=customer_id, order_id=order_id, exchanges=dict(action["exchanges"])
            )
        else:
            result = service.request_return(
                customer_id=customer_id, order_id=order_id, item_ids=list(action["item_ids"])
            )
    except OrderNotFound:
        return say(ctx, "dialogue", "order_not_found", {"order_id": order_id}, label=intent)
    except OrderServiceError as exc:
        if exc.code == "order_system_unavailable":
            raise
        order_now = service.order_get(customer_id=customer_id, order_id=order_id)
        facts = returns_facts(ctx, order_now) if order_now else {"order_id": order_id}
        key = _REFUSAL_KEYS.get(exc.code, "refused")
        return say(ctx, intent, key, facts | {"reason": str(exc)}, personal=True)
    plan = say(ctx, intent, "done", _return_done_facts(ctx, result), personal=True)
    plan.actions = ["performed:" + action["type"]]
    if not result.created:
        plan.actions.append("repeat")
    return plan


def _return_done_facts(ctx: TurnContext, result: ReturnFacts) -> dict[str, str]:
    lang = reply_language(ctx)
    return {
        "order_id": result.order_id,
        "items": ", ".join(item.name for item in result.items),
        "amount": fmt_money(abs(result.amount)),
        "payment_method": PAYMENT_TEXT[lang].get(result.payment_method, result.payment_method),
        "refund_timing": refund_timing(result.payment_method, lang),
    }
