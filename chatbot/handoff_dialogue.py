"""The dialogue's part of the human handoff: offering a person, and the shopper's answer.

Asking for a person (the ``handoff`` intent, a router rule in EN and ZH) gets an offer
the shopper confirms; the bot also offers one on its own when it is stuck (the router
unsure twice in a row, the shopper saying the answer is wrong, a thumbs-down followed by
the same question again) and when an answerer adds ``offer:human``. A "yes" plans the
``handoff:queue`` action, which the turn performs (``services.turn_plan``): the
conversation joins the queue and the reply says its place and the wait. When nobody can
answer (outside business hours, nobody online) the reply says so and the widget offers
to leave a ticket (``handoff:unavailable``).
"""

from __future__ import annotations

import re
import time

from routing import types as rt

from .answerers.base import AnswerPlan, TurnContext, say
from .answerers.offers import OFFER_HUMAN
from .handoff import H, handoff_availability

HANDOFF_INTENT = rt.HANDOFF
# turn_plan puts the conversation's handoff status here for the turn (and takes it out),
# and the question whose answer the shopper just rated thumbs-down.
STATUS_KEY = "handoff_status"
DISLIKED_KEY = "handoff_disliked"
OFFER_TTL_S = 600
# The shopper says the bot's answer is wrong: offer a person instead of arguing.
_WRONG = re.compile(
    r"\b(?:that'?s|that is|this is|your answer is|the answer is|you(?:'re| are))\s+"
    r"(?:wrong|incorrect|not (?:right|correct|true)|not what i asked)\b"
    r"|答错|不对|回答错|不是我问的|答非所问",
    re.IGNORECASE,
)
_WORD = re.compile(r"[a-z0-9#]+|[\u4e00-\u9fff]")


def _similar(text: str, previous: str) -> bool:
    """The shopper asks (nearly) the same question again: at least 60% of the words
    (characters, for Chinese) shared."""
    a, b = set(_WORD.findall(text.lower())), set(_WORD.findall(previous.lower()))
    return bool(a and b) and len(a & b) / len(a | b) >= 0.6


def _unavailable(ctx: TurnContext, reason: str) -> AnswerPlan:
    return say(
        ctx,
        HANDOFF_INTENT,
        reason,
        actions=["handoff:unavailable", f"handoff:{reason}"],
    )


def handoff_offer(ctx: TurnContext, key: str = "offer") -> AnswerPlan:
    """The shopper asked for a person (or the bot offers one): ask to confirm, say
    they are queued already, or that nobody can answer now."""
    if ctx.state.get(STATUS_KEY) in (H.QUEUED, H.CLAIMED):
        return say(ctx, HANDOFF_INTENT, "already", actions=["handoff:queue"])
    availability = handoff_availability()
    if not availability.available:
        return _unavailable(ctx, availability.reason)
    ctx.state["pending_handoff"] = {"at": time.time()}
    return say(ctx, HANDOFF_INTENT, key, actions=[OFFER_HUMAN])


def handoff_continue(ctx: TurnContext, *, yes: bool, no: bool) -> AnswerPlan | None:
    """The shopper's answer to an offer of a person; None if there was no (fresh) offer
    or the message is neither yes nor no (the dialogue then goes on as usual)."""
    pending = ctx.state.pop("pending_handoff", None)
    if not pending or time.time() - float(pending.get("at", 0)) > OFFER_TTL_S:
        return None
    if ctx.state.get("pending_offer"):
        # Offered both the large tier and a person (L2 found nothing): a bare "yes"
        # keeps its meaning from before the handoff existed, the large tier. Asking for
        # a person still works through the handoff rule.
        return None
    if yes:
        availability = handoff_availability()
        if not availability.available:
            return _unavailable(ctx, availability.reason)
        # The text (place in the queue, wait) is written once the turn has queued it.
        return AnswerPlan(
            tier=rt.L1,
            intent=HANDOFF_INTENT,
            text="",
            language=ctx.language,
            actions=["handoff:queue"],
        )
    if no:
        return say(ctx, HANDOFF_INTENT, "declined")
    return None


def handoff_offer_if_stuck(
    ctx: TurnContext, decision: rt.RouteDecision, plan: AnswerPlan
) -> AnswerPlan:
    """Offer a person instead of ``plan`` when the bot is stuck: the router unsure twice
    in a row, the shopper saying the answer is wrong, or asking again the question
    whose answer they just rated thumbs-down."""
    unsure = decision.reason.get("why") == "low_confidence"
    streak = int(ctx.state.get("unsure_streak", 0)) + 1 if unsure else 0
    ctx.state["unsure_streak"] = streak
    repeated = _similar(ctx.text, str(ctx.state.get(DISLIKED_KEY) or ""))
    if streak < 2 and not _WRONG.search(ctx.text) and not repeated:
        return plan
    if ctx.state.get(STATUS_KEY) in (H.QUEUED, H.CLAIMED):
        return plan
    if not handoff_availability().available:
        return plan
    ctx.state["unsure_streak"] = 0
    offer = handoff_offer(ctx, "offer_after_trouble")
    offer.confidence, offer.route_reason = plan.confidence, plan.route_reason
    return offer
