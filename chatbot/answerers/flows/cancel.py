"""The cancel flow: only a pending order, then the shopper's reason (one of the store
policy's two, never assumed), then the confirmation. ``flows.perform`` cancels after
the shopper's yes."""

from __future__ import annotations

import re
import time

from chatbot.orders.types import OrderFacts
from routing import types as rt

from ..base import AnswerPlan, TurnContext, say, template_text
from ..order_format import order_facts
from ..reply_match import Option, reply_pick
from .eligible import status_allows
from .refusal import refuse

# The store policy's cancellation reasons (tau-bench retail wiki): the shopper gives
# one; the bot never assumes it. Keys are what the order system records.
_CANCEL_REASON_PATTERNS = {
    "ordered by mistake": re.compile(
        r"mistake|accident|wrong|twice|duplicate|by error|didn'?t mean|"
        r"下错|拍错|买错|点错|误|错了|重复",
        re.IGNORECASE,
    ),
    "no longer needed": re.compile(
        r"no longer|don'?t (?:need|want)|do not (?:need|want)|not needed|"
        r"changed? my mind|不需要|不要了|不想要|用不上|不用了|不想买|不需要了",
        re.IGNORECASE,
    ),
}

# The order the question names them in ("no longer needed, or ordered by mistake?"):
# "the first one" is the first the shopper read.
_ASKED_ORDER = ("no longer needed", "ordered by mistake")


def cancel_start(ctx: TurnContext, order: OrderFacts, facts: dict[str, str]) -> AnswerPlan:
    """Cancel the shopper's chosen order: refused unless pending; confirmed when the
    message gives the reason, else the reason is asked for."""
    if not status_allows(rt.CANCEL_ORDER, order):
        return refuse(ctx, rt.CANCEL_ORDER, order, facts)
    reason = cancel_reason_find(ctx.text)
    if reason:
        return cancel_confirm(ctx, order, reason)
    # The store policy needs the shopper's reason; ask, never assume it.
    ctx.state.update(awaiting="cancel_reason", cancel_order_id=order.order_id)
    plan = say(ctx, rt.CANCEL_ORDER, "ask_reason", facts, personal=True)
    plan.choices = [option.label for option in cancel_reason_options(ctx)]
    return plan


def cancel_reason_options(ctx: TurnContext) -> list[Option]:
    """The policy's reasons as the question offers them: the label in the reply's
    language, any wording of each (EN and ZH) read back as that reason."""
    return [
        Option(
            key=reason,
            label=template_text(ctx, rt.CANCEL_ORDER, "reason_" + reason.replace(" ", "_")),
            pattern=pattern,
        )
        for reason, pattern in sorted(
            _CANCEL_REASON_PATTERNS.items(), key=lambda item: _ASKED_ORDER.index(item[0])
        )
    ]


def cancel_reason_find(text: str) -> str:
    """The policy's cancellation reason the shopper gave in ``text``, or ""."""
    for reason, pattern in _CANCEL_REASON_PATTERNS.items():
        if pattern.search(text):
            return reason
    return ""


def cancel_confirm(ctx: TurnContext, order: OrderFacts, reason: str) -> AnswerPlan:
    """List the cancellation with its reason; deterministic code performs it after a yes."""
    facts = order_facts(order, ctx.language) | {
        "reason": template_text(ctx, rt.CANCEL_ORDER, "reason_" + reason.replace(" ", "_"))
    }
    ctx.state["pending_action"] = {
        "type": "cancel",
        "order_id": order.order_id,
        "reason": reason,
        "at": time.time(),
    }
    return say(ctx, rt.CANCEL_ORDER, "confirm_reason", facts, actions=["confirm"], personal=True)


def cancel_reason_given(ctx: TurnContext, order_id: str) -> AnswerPlan | None:
    """The shopper's answer to "why cancel?": the confirmation, or None if no policy
    reason is in it (the dialogue then asks again or moves on)."""
    # The reason the question offered (its wording, its place, "the first one"), else
    # the first of the policy's reasons the message names.
    picked = reply_pick(ctx.text, cancel_reason_options(ctx))
    reason = picked[0].key if picked else cancel_reason_find(ctx.text)
    if not reason:
        return None
    order = ctx.orders().order_get(customer_id=ctx.customer_id, order_id=order_id)
    if order is None:
        return say(
            ctx, "dialogue", "order_not_found", {"order_id": order_id}, label=rt.CANCEL_ORDER
        )
    if not status_allows(rt.CANCEL_ORDER, order):
        return refuse(ctx, rt.CANCEL_ORDER, order, order_facts(order, ctx.language))
    return cancel_confirm(ctx, order, reason)
