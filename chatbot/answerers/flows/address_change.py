"""The change-of-address flow: only a pending order, then the new address (in the
message or asked for), then the confirmation. ``flows.perform`` changes it after the
shopper's yes."""

from __future__ import annotations

import time

from chatbot.orders.identity import proof_is_strong
from chatbot.orders.types import Address, OrderFacts
from routing import types as rt

from ..address_parse import address_format_text, parse_address
from ..base import AnswerPlan, TurnContext, say, template_text
from ..order_format import order_facts
from .eligible import status_allows
from .refusal import refuse


def address_start(ctx: TurnContext, order: OrderFacts, facts: dict[str, str]) -> AnswerPlan:
    """Change the chosen order's address: refused unless pending; confirmed when the
    message holds the new address, else it is asked for."""
    if not status_allows(rt.CHANGE_ADDRESS, order):
        return refuse(ctx, rt.CHANGE_ADDRESS, order, facts)
    address = parse_address(ctx.text)
    if address is not None:
        return address_confirm(ctx, order.order_id, address)
    ctx.state.update(awaiting="address", address_order_id=order.order_id)
    form = {"address_format": address_format_text(ctx.language)}
    return say(ctx, rt.CHANGE_ADDRESS, "ask_address", facts | form, personal=True)


def address_confirm(ctx: TurnContext, order_id: str, address: Address) -> AnswerPlan:
    order = ctx.orders().order_get(customer_id=ctx.customer_id, order_id=order_id)
    if order is None:
        return say(
            ctx, "dialogue", "order_not_found", {"order_id": order_id}, label=rt.CHANGE_ADDRESS
        )
    # The address on file is personal data: a shopper known only by a typed email (the
    # shop's TIERDESK_CHAT_IDENTITY_READS) must not learn it from the confirmation.
    proven = proof_is_strong(state=ctx.state, identity=ctx.identity, customer_id=ctx.customer_id)
    facts = order_facts(order, ctx.language) | {
        "address": address.one_line(),
        "old_address": order.address.one_line()
        if proven
        else template_text(ctx, rt.CHANGE_ADDRESS, "address_on_file"),
    }
    ctx.state["pending_action"] = {
        "type": "change_address",
        "order_id": order.order_id,
        "at": time.time(),
        "address": address.__dict__,
    }
    return say(ctx, rt.CHANGE_ADDRESS, "confirm", facts, actions=["confirm"], personal=True)
