"""The exchange flow once its items are chosen (``flows.returns``): for each item, which
of the product's other options to swap it for, then the confirmation with the price
difference."""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

from chatbot.orders.types import OrderFacts, OrderItem
from routing import types as rt
from routing.templates import template_render

from ..base import AnswerPlan, TurnContext, say, template_text
from ..order_format import (
    fmt_money,
    item_line,
    money,
    numbered_list,
    options_text,
    returns_facts,
)
from .item_choice import variant_in_text

_MAX_VARIANTS_LISTED = 10


def exchange_ask_next(ctx: TurnContext, order: OrderFacts) -> AnswerPlan:
    """Ask what the next item without a choice should be swapped for, listing the
    available options of the same product (the store data's variants)."""
    state = ctx.state
    flow = state["exchange_flow"]
    by_id = {item.item_id: item for item in order.items}
    facts = returns_facts(ctx, order)
    for item_id in flow["item_ids"]:
        if item_id in flow["chosen"]:
            continue
        item = by_id[item_id]
        variants = ctx.orders().item_variants(item_id=item_id)[:_MAX_VARIANTS_LISTED]
        if not variants:
            state.pop("exchange_flow", None)
            state.pop("awaiting", None)
            return say(
                ctx, rt.EXCHANGE_ITEM, "no_variants", facts | {"item": item.name}, personal=True
            )
        flow["variants"] = [v.item_id for v in variants]
        flow["current"] = item_id
        state["awaiting"] = "exchange_variant"
        lines = [
            f"{options_text(_changed_options(item, v)) or options_text(v.options)} "
            f"({money(v.price)})"
            for v in variants
        ]
        plan = say(
            ctx,
            rt.EXCHANGE_ITEM,
            "ask_variant",
            facts | {"item": item_line(item), "variant_list": numbered_list(lines, ctx.language)},
            personal=True,
        )
        # A button sends its line, which names the option's values (variant_in_text).
        plan.choices = lines
        return plan
    state.pop("awaiting", None)
    return exchange_confirm(ctx, order, state.pop("exchange_flow"))


def _changed_options(item: OrderItem, variant: OrderItem) -> dict[str, str]:
    return {k: v for k, v in variant.options.items() if item.options.get(k) != v}


def exchange_variant_given(ctx: TurnContext) -> AnswerPlan | None:
    """The shopper's answer to "what should it be swapped for?"; None when it names no
    listed option (the dialogue then asks again once or moves on)."""
    state = ctx.state
    flow = state.get("exchange_flow") or {}
    order = ctx.orders().order_get(customer_id=ctx.customer_id, order_id=flow.get("order_id", ""))
    if order is None:
        state.pop("exchange_flow", None)
        return say(
            ctx,
            "dialogue",
            "order_not_found",
            {"order_id": str(flow.get("order_id", ""))},
            label=rt.EXCHANGE_ITEM,
        )
    variants = {v.item_id: v for v in ctx.orders().item_variants(item_id=flow["current"])}
    listed = [variants[i] for i in flow.get("variants", []) if i in variants]
    chosen = variant_in_text(ctx.text, listed)
    if chosen is None:
        return None
    flow["chosen"][flow["current"]] = chosen.item_id
    return exchange_ask_next(ctx, order)


def exchange_confirm(ctx: TurnContext, order: OrderFacts, flow: dict[str, Any]) -> AnswerPlan:
    by_id = {item.item_id: item for item in order.items}
    swaps, difference = [], Decimal("0.00")
    for item_id, new_id in flow["chosen"].items():
        item = by_id[item_id]
        new = next(v for v in ctx.orders().item_variants(item_id=item_id) if v.item_id == new_id)
        changed = options_text(_changed_options(item, new))
        was = options_text(_changed_options(new, item))
        swaps.append(f"{item.name} ({was} → {changed}, {money(new.price)})")
        difference += new.price - item.price
    facts = returns_facts(ctx, order, [by_id[i] for i in flow["chosen"]]) | {
        "swaps": "; ".join(swaps),
        "difference": fmt_money(abs(difference)),
    }
    diff_key = "diff_pay" if difference > 0 else "diff_refund" if difference < 0 else "diff_none"
    facts["difference_text"] = template_render(
        template_text(ctx, rt.EXCHANGE_ITEM, diff_key), facts
    )
    ctx.state["pending_action"] = {
        "type": "exchange",
        "order_id": order.order_id,
        "exchanges": dict(flow["chosen"]),
        "at": time.time(),
    }
    return say(ctx, rt.EXCHANGE_ITEM, "confirm", facts, actions=["confirm"], personal=True)
