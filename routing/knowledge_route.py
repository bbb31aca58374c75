"""Knowledge-aware routing: a question the knowledge base can answer goes to L2.

The classifier learns intents from examples; it cannot know that a support admin
added an article about gift cards this morning. So after it decides, a general
question (not about the shopper's own order) is checked against the knowledge base:

- an approved answer card matches it (``knowledge.cards.card_match``): L2, whatever
  the classifier said (except a rule: handoff, greetings, order ids);
- the classifier was unsure or called it out of scope, or chose an order intent for
  a question asked in general ("how long does a refund to my card take?"), and
  retrieval finds a relevant passage: L2.

A message about the shopper's own order ("where is my order", an order id, "cancel
it") keeps its order intent: the L1 flow acts on that order. A statement such as
"I want to cancel" is not a question, so it keeps its intent too.

Blocking (embedding, search): runs in the turn's worker thread, after the classifier.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import replace

from django.conf import settings

from . import types as rt
from .order_ids import order_id_find

logger = logging.getLogger(__name__)

# The shopper's own order, package, refund... (EN and ZH).
_PERSONAL = re.compile(
    r"\b(my|our)\s+(order|package|parcel|delivery|refund|return|shipment|purchase|item|"
    r"items|exchange|tracking)s?\b|\b(it|this one|that one)\b\s*(\?|$)|"
    r"我的订单|我的包裹|我的快递|我的退款|我的退货|这个订单|这单|订单号",
    re.IGNORECASE,
)
_QUESTION = re.compile(
    r"[?？]\s*$|^\s*(how|what|when|where|which|who|why|can|could|do|does|did|is|are|was|"
    r"will|would|should|if|any|anything)\b|吗|呢|怎么|怎样|如何|多久|多少|多长|什么|哪|几|"
    r"能不能|可不可以|是否|有没有",
    re.IGNORECASE,
)
# Decisions a knowledge answer may replace (rules for handoff, greetings and order ids
# are never overridden).
_GENERAL = {rt.OUT_OF_SCOPE, rt.KNOWLEDGE_QUESTION, rt.COMPLEX_QUESTION}


def is_personal(text: str) -> bool:
    return bool(order_id_find(text) or _PERSONAL.search(text))


def is_question(text: str) -> bool:
    return bool(_QUESTION.search(text))


def knowledge_route(decision: rt.RouteDecision, *, text: str, language: str) -> rt.RouteDecision:
    """The decision, or L2 when the knowledge base answers the question."""
    if not settings.TIERDESK_ROUTE_BY_KNOWLEDGE or decision.tier == rt.L2:
        return decision
    if decision.reason.get("kind") == "rule" or decision.intent in (rt.GREETING, rt.HANDOFF):
        return decision
    if is_personal(text):
        return decision
    general = decision.intent in _GENERAL or decision.tier in (rt.CLARIFY, rt.L3)
    if not general and not (decision.intent in rt.L1_INTENTS and is_question(text)):
        return decision
    started = time.perf_counter()
    from knowledge.cards import card_match

    lang = language if language in ("en", "zh") else "en"
    try:
        card = card_match(question=text, language=lang)
    except Exception:
        logger.exception("answer cards unavailable for routing")
        card = None
    how = ""
    if card is not None:
        how = f"card {card.row.card_id} ({card.how} {card.score:.2f})"
    elif decision.tier != rt.L3:
        # The large tier was chosen for a complex question: only an approved card
        # (a reviewed answer) takes it back; a passage alone does not.
        from knowledge.retrieval import passages_retrieve

        result = passages_retrieve(question=text, language=lang)
        top = result.passages[0] if result.passages else None
        if top is not None and top.relevant:
            how = f"passage {top.chunk_id} (similarity {top.similarity:.2f})"
    if not how:
        return decision
    reason = {
        "kind": "knowledge",
        "by": how,
        "was": {"tier": decision.tier, "intent": decision.intent},
        "ms": round((time.perf_counter() - started) * 1000, 2),
    }
    return replace(decision, tier=rt.L2, intent=rt.KNOWLEDGE_QUESTION, reason=reason)
