"""Knowledge-aware routing: a question the knowledge base can answer goes to L2.

The classifier learns intents from examples; it cannot know that a support admin
added an article about gift cards this morning. So after it decides, a general
question (not about the shopper's own order) is checked against the knowledge base:

- an approved answer card matches it (``knowledge.cards.card_match``): L2, whatever
  the classifier said (except a rule: handoff, greetings, order ids);
- the classifier was unsure or called it out of scope, or chose an order intent for
  a question asked in general ("how long does a refund to my card take?"), and
  retrieval finds a relevant passage: L2;
- a question the classifier placed nowhere, with nothing in the knowledge base: L2
  too, which says it doesn't know and offers a person (not the clarify menu).

A message about the shopper's own order ("where is my order", an order id, "cancel
it") keeps its order intent: the L1 flow acts on that order. A statement such as
"I want to cancel" is not a question, so it keeps its intent too. But a question about
the rule, asked about "my order" ("my order is processed, can I still cancel it?",
"if I change my card now does it apply to that order?") is a policy question: with no
order id and an approved card, or a passage that covers the question's words, it goes
to L2, which states the rule.

Blocking (embedding, search): runs in the turn's worker thread, after the classifier.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import replace

from django.conf import settings

from knowledge import question_type

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
# A question about the rule rather than a request or a status question, asked about
# "my order" (EN and ZH).
_RULE = re.compile(
    r"\b(can|could|may)\s+(i|we|you|they|it)\b[^?.!]{0,40}\bstill\b|\bstill\b[^?.!]{0,12}\b"
    r"(cancel|change|return|exchange|edit|modify|add|remove)|,?\s*right\s*\?|\btoo late\b|"
    r"\b(does|do|will|would)\s+(it|that|this|they)\s+(apply|count|work|affect|change)\b|"
    r"\b(is it|am i|are we)\s+(possible|allowed|able)\b|\bwhat happens\b|\bpolicy\b|"
    r"\b(can|could)\s+(i|we)\b[^?.!]{0,60}\bif\b|"
    r"^\s*(after|if|once|when)\b[^?]{3,}\b(can|could|do|does|will)\s+(i|it|you)\b|"
    r"还能|还可以|能不能|可不可以|是否可以|会不会|吧[?？]?\s*$|怎么算|规定",
    re.IGNORECASE,
)
# Asking where the order is or when it comes: the L1 flow looks it up.
_STATUS = re.compile(
    r"\bwhere\b|\bstatus\b|\btrack|\bwhen (will|does|is)\b|\barriv|\bshipped yet\b|"
    r"到哪|状态|物流|什么时候到|哪天",
    re.IGNORECASE,
)
# The share of the question's words a passage must hold to take a question from the
# large tier or from the shopper's own order (tuned on the dev split).
_STRONG_COVERAGE = 0.75
# The classifier's out-of-scope probability above which a question is off the shop's
# topics altogether (weather, jokes: 1.0) rather than a shop question nobody wrote an
# article for ("do you ship to Antarctica?": 0.81). Tuned on the dev split.
_OFF_TOPIC = 0.95
# Decisions a knowledge answer may replace (rules for handoff, greetings and order ids
# are never overridden).
_GENERAL = {rt.OUT_OF_SCOPE, rt.KNOWLEDGE_QUESTION, rt.COMPLEX_QUESTION}


def is_personal(text: str) -> bool:
    return bool(order_id_find(text) or _PERSONAL.search(text))


def is_question(text: str) -> bool:
    """Whether the message asks something rather than requests it: knowledge's
    ``question_type.is_question``, broader than the coverage check's ``is_yes_no`` and
    ``is_wh`` (its docstring lists the differences)."""
    return question_type.is_question(text)


def is_rule_question(text: str) -> bool:
    """A question about what the shop allows, asked about the shopper's own order
    ("can I still cancel it?", "..., right?", "does it apply to that order?"), not a
    request to act on it or a status question."""
    return bool(_RULE.search(text)) and not _STATUS.search(text)


def unknown_question(decision: rt.RouteDecision, text: str) -> bool:
    """A question the classifier placed nowhere ("do you ship to Antarctica?"), about
    no order of the shopper's: L2 answers it or says it doesn't know and offers a
    person, a real abstention, where the clarify menu would only ask again. A guess at
    an order intent below the clarify threshold, and a question clearly off the shop's
    topics, keep their clarify."""
    if decision.tier != rt.CLARIFY or decision.intent != rt.OUT_OF_SCOPE:
        return False
    if decision.reason.get("candidate") in rt.ORDER_INTENTS or is_personal(text):
        return False
    top = decision.reason.get("top") or []
    if decision.reason.get("why") == rt.OUT_OF_SCOPE and top and top[0][1] >= _OFF_TOPIC:
        return False  # "what's the weather in Paris?": the menu says what the bot is for
    if not is_question(text):
        return False
    from knowledge.coverage import question_coverage

    return bool(question_coverage(text, []).terms)


def knowledge_route(decision: rt.RouteDecision, *, text: str, language: str) -> rt.RouteDecision:
    """The decision, or L2 when the knowledge base answers the question."""
    if not settings.TIERDESK_ROUTE_BY_KNOWLEDGE or decision.tier == rt.L2:
        return decision
    if decision.reason.get("kind") == "rule" or decision.intent in (rt.GREETING, rt.HANDOFF):
        return decision
    strict = False
    if is_personal(text):
        # An order id is always about that order; "my order" only when the question is
        # about the rule rather than a request or a status question, or when the
        # classifier placed it nowhere ("my package was delivered and shipping was too
        # expensive, can I get some back?"): no order flow would take it anyway.
        if order_id_find(text):
            return decision
        if decision.tier != rt.CLARIFY and not (is_question(text) and is_rule_question(text)):
            return decision
        strict = True
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
    else:
        from knowledge.answer import coverage_first, passage_material
        from knowledge.coverage import question_coverage
        from knowledge.retrieval import passages_retrieve

        result = passages_retrieve(question=text, language=lang)
        # The relevant passage L2 would answer from (``answer_plan`` and an order
        # flow's rule take the same one), not the best-ranked passage alone: "消费多少
        # 能升银卡" ranked the pickup section first (not relevant) and the membership
        # levels, which answer it, second, so it stayed with the shipping-cost flow.
        relevant = coverage_first(text, [p for p in result.passages if p.relevant])
        top = relevant[0] if relevant else None
        if top is not None:
            # The passage must hold what the question asks about, not only look
            # related to it; the large tier (a complex question) and the shopper's own
            # order give a question up only to a passage holding nearly all its words.
            # The routing bar as before: a yes/no question about a noun the passage
            # doesn't name still goes to L2, which says it doesn't know (with a person).
            coverage = question_coverage(text, [passage_material(top)], nouns=False)
            strong = decision.tier == rt.L3 or strict
            if strong and not is_question(text):
                pass  # "I want to return both items": a request, not a policy question
            elif coverage.answers and (not strong or coverage.share >= _STRONG_COVERAGE):
                how = (
                    f"passage {top.chunk_id} (similarity {top.similarity:.2f}, "
                    f"covers {coverage.share:.2f})"
                )
    if not how and unknown_question(decision, text):
        how = "a question the knowledge base doesn't answer: L2 says so and offers a person"
    if not how:
        return decision
    reason = {
        "kind": "knowledge",
        "by": how,
        "was": {"tier": decision.tier, "intent": decision.intent},
        "ms": round((time.perf_counter() - started) * 1000, 2),
    }
    return replace(decision, tier=rt.L2, intent=rt.KNOWLEDGE_QUESTION, reason=reason)
