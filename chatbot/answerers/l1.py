"""The L1 answerer: order questions and the shop's small talk, from templates and the
shop's order data.

``plan`` answers greetings, account help and shipping costs, and the order intents
(status, delivery time, refund, cancel, change address, return, exchange): it looks
the order up for the verified shopper, asks for what is missing (identity, which
order) and picks the template for the order's case; cancelling, changing an address,
returning and exchanging go on in their flows (``chatbot.answerers.flows``), which
only ever confirm; ``flows.perform`` runs the action after the shopper's explicit yes
(the dialogue decides when). Read-only facts (order status, delivery time, refund
status, shipping cost) are phrased by the fast model from a few-shot prompt, under
the fact guard (``reply_guards.FactGuard``); anything else is the template text.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from django.conf import settings

from inference.base import GenerationRequest
from inference.prompts import EXAMPLE_FACTS, l1_prompt
from routing import types as rt
from routing.templates import placeholders, shop_facts, template_render

from .base import AnswerPlan, GuardedAnswerer, TurnContext, say, template_text
from .clarify import clarify
from .flows.address_change import address_start
from .flows.cancel import cancel_start
from .flows.delivery import delivery_estimate, is_general_delivery
from .flows.eligible import RETURN_INTENTS
from .flows.order_pick import order_pick
from .flows.returns import return_start
from .l2 import L2Answerer
from .offers import offers_of
from .order_format import (
    LATE_TEXT,
    display_id,
    find_order_id,
    is_late,
    order_facts,
    reply_language,
    shipping_text,
    tracking_url,
)
from .reply_guards import FactGuard, Guard

if TYPE_CHECKING:
    from knowledge.rule_case import Subject

logger = logging.getLogger(__name__)

# Facts that must appear in a model-phrased reply when its template uses them ("late":
# a late order's reply must say so, whatever else the model rewords).
REQUIRED_KEYS = {"order_id", "status_text", "carrier", "tracking", "eta", "refund", "total", "late"}
# A price in a rendered fact ("$50.00").
_MONEY = re.compile(r"\$\d+(?:\.\d+)?")


@dataclass
class L1Plan(AnswerPlan):
    """A templated answer the fast model phrases. ``text`` is the template text the
    fact guard falls back on; ``guard_facts`` is None when the guard is off (a shop's
    choice, e.g. for a stronger fast model): the model's text goes out unchecked."""

    guard_facts: dict[str, str] | None = None
    guard_required: list[str] = field(default_factory=list)
    # The knowledge-base passages or card a quoted rule comes from (``with_rule``).
    citations: list[dict[str, Any]] = field(default_factory=list)

    def cited(self) -> list[dict[str, Any]]:
        return self.citations


class L1Answerer(GuardedAnswerer):
    tier = rt.L1

    def plan(self, ctx: TurnContext, decision: rt.RouteDecision) -> AnswerPlan:
        return with_rule(ctx, decision, self.flow(ctx, decision))

    def flow(self, ctx: TurnContext, decision: rt.RouteDecision) -> AnswerPlan:
        intent = decision.intent
        if intent == rt.GREETING:
            return say(ctx, rt.GREETING, _greeting_key(ctx.text))
        if intent == rt.ACCOUNT_HELP:
            return say(ctx, rt.ACCOUNT_HELP, "default")
        if intent == rt.SHIPPING_COST:
            options = shipping_text(ctx)
            if not options:
                return _from_articles(ctx, decision)
            plan = phrase(ctx, rt.SHIPPING_COST, "default", {"options": options})
            # Each price and free-shipping threshold is a fact the reply must keep: the
            # fast model's "Standard $5.99 (3-7 business days); Express $14.99" dropped
            # "free over $50.00", the answer to "when do I stop paying for postage?".
            required = [*plan.guard_required, *_MONEY.findall(options)]
            return replace(plan, guard_required=required)
        if intent == rt.DELIVERY_TIME and is_general_delivery(ctx.text, dict(decision.slots)):
            return delivery_estimate(ctx) or _from_articles(ctx, decision)
        if intent in rt.ORDER_INTENTS:
            return order_intent(ctx, intent, dict(decision.slots))
        return clarify(ctx)

    def guards(self, plan: AnswerPlan) -> list[Guard]:
        if not isinstance(plan, L1Plan) or plan.guard_facts is None:
            return []
        return [
            FactGuard(facts=plan.guard_facts, required=plan.guard_required, template_text=plan.text)
        ]


def _from_articles(ctx: TurnContext, decision: rt.RouteDecision) -> AnswerPlan:
    """The order system lists no shipping options (a shop whose prices and times live
    in its help articles): the knowledge base answers, never an empty list."""
    reason = decision.reason | {"no_shipping_options": True}
    to_l2 = replace(decision, tier=rt.L2, intent=rt.KNOWLEDGE_QUESTION, reason=reason)
    return L2Answerer().plan(ctx, to_l2)


# Flows that quote the shop's rule when the knowledge base has one for the message.
RULE_INTENTS = frozenset((*rt.ORDER_INTENTS, rt.ACCOUNT_HELP))


def with_rule(ctx: TurnContext, decision: rt.RouteDecision, plan: AnswerPlan) -> AnswerPlan:
    """The flow's reply with the shop's rule for the message before it.

    Routing can't tell every question about the rule ("can I still return my order
    after 30 days?") from a request to act on an order, so the order flows cite the
    knowledge base themselves: an approved card's answer, or the article's own
    sentences when a passage holds the question (``knowledge.answer.rule_answer``),
    then the flow's own step (asking who the shopper is, which order...). Account help
    answers from the articles alone: its template is generic. A model-phrased reply
    (order facts under the fact guard), a message naming an order id and a routing
    rule's decision keep the flow's reply.

    An order flow quotes only the rule's sentences that answer this shopper
    (``_for_case``): a message that asks nothing beyond its intent ("where is my
    order?") gets no rule, and a sentence stated for another case (members of a
    level, orders abroad) is left out unless the shopper's case is known to be it."""
    if (
        decision.intent not in RULE_INTENTS
        or plan.generation is not None
        or decision.reason.get("kind") == "rule"
        or find_order_id(ctx.text)
    ):
        return plan
    from knowledge import rule_case
    from knowledge.answer import rule_answer
    from routing.intent_topics import intent_topic
    from routing.knowledge_route import is_question

    order_flow = decision.intent in rt.ORDER_INTENTS
    subject = rule_case.message_subject(ctx.text, intent_topic(decision.intent, ctx.language))
    if order_flow and not subject:
        return plan
    try:
        rule = rule_answer(question=ctx.text, language=ctx.language, judge=is_question(ctx.text))
    except Exception:  # an index fault leaves the flow's own reply, never a guess
        logger.exception("knowledge base unavailable to the %s flow", decision.intent)
        return plan
    if rule is None:
        return _without_rule(ctx, plan) if order_flow else plan
    rule_text = _for_case(ctx, rule.text, subject) if order_flow else rule.text
    if not rule_text:
        return plan  # the shop has a rule, but not one known to be this shopper's
    if decision.intent == rt.ACCOUNT_HELP:
        text = rule_text
    elif plan.text == template_text(ctx, "dialogue", "ask_identity"):
        # "I can help with that. First, ..." reads wrong after an answer.
        text = f"{rule_text}\n\n{template_text(ctx, 'dialogue', 'ask_identity_also')}"
    else:
        text = f"{rule_text}\n\n{plan.text}"
    return L1Plan(
        tier=plan.tier,
        intent=plan.intent,
        text=text,
        language=plan.language,
        actions=plan.actions,
        personal=plan.personal,
        citations=rule.citations,
    )


def _for_case(ctx: TurnContext, text: str, subject: Subject) -> str:
    """The rule's sentences about the message's subject that hold for the shopper's
    case; "" when none does (the order system failing leaves the case unknown)."""
    from chatbot.orders.types import OrderServiceError
    from knowledge import rule_case
    from shop.profile import shop_profile

    from .shopper_case import shopper_case

    try:
        case = shopper_case(ctx)
    except OrderServiceError:
        case = rule_case.ShopperCase()
    profile = shop_profile()
    return rule_case.rule_for_case(
        text,
        subject,
        case,
        levels=profile.returns.windows_by_membership,
        home=profile.country,
    )


def _without_rule(ctx: TurnContext, plan: AnswerPlan) -> AnswerPlan:
    """A general question the knowledge base has no rule for ("can you deliver on a
    Sunday?", about no order of the shopper's): say the articles don't tell, then the
    flow's step for the shopper who did mean an order. Asking who they are alone
    answered a question nobody asked. A request or a question about "my order" keeps
    the flow's reply."""
    from knowledge.answer import NO_RULE
    from routing.knowledge_route import is_personal, is_question

    if is_personal(ctx.text) or not is_question(ctx.text):
        return plan
    no_rule = NO_RULE.get(ctx.language, NO_RULE["en"])
    step = plan.text
    if step == template_text(ctx, "dialogue", "ask_identity"):
        step = template_text(ctx, "dialogue", "ask_identity_also")
    return replace(plan, text=f"{no_rule}\n\n{step}")


def phrase(ctx: TurnContext, intent: str, key: str, facts: dict[str, str]) -> L1Plan:
    """A templated answer that the fast model phrases, guarded by the facts."""
    lang = ctx.language
    template = template_text(ctx, intent, key)
    # The shop's currency and id example are part of the wording, not facts to restate.
    shop = shop_facts(template)
    facts = shop | facts
    text = template_render(template, facts)
    keys = [k for k in placeholders(template) if facts.get(k) and k not in shop]
    base_example = EXAMPLE_FACTS.get(lang, EXAMPLE_FACTS["en"])
    example_facts = (
        shop
        | base_example
        | {
            "status_text": facts.get("status_text", ""),
            "late": facts.get("late", ""),
            "track_url": tracking_url(base_example["carrier"], base_example["tracking"]),
        }
    )
    prompt = l1_prompt(
        template=template,
        keys=keys,
        facts=facts,
        example_facts=example_facts,
        example_reply=template_render(template, example_facts),
        language=lang,
        # Compressed instruction + facts (spaCy; we are in a worker thread here).
        # The guard still checks against the uncompressed facts.
        reply=text,
        compress=settings.TIERDESK_L1_COMPRESSION,
    )
    generation = GenerationRequest(
        prompt=prompt,
        max_tokens=settings.TIERDESK_FAST_MAX_TOKENS,
        temperature=settings.TIERDESK_FAST_TEMPERATURE,
        stop=("\n",),
    )
    required = [facts[k] for k in keys if k in REQUIRED_KEYS and facts.get(k)]
    return L1Plan(
        tier=rt.L1,
        intent=intent,
        text=text,
        language=lang,
        generation=generation,
        role="fast",
        guard_facts={k: facts[k] for k in keys} if settings.TIERDESK_FACT_GUARD else None,
        guard_required=required,
        personal=intent != rt.SHIPPING_COST,
        actions=offers_of(intent, key),
    )


def order_intent(ctx: TurnContext, intent: str, slots: dict[str, str]) -> AnswerPlan:
    """An order intent: ask who the shopper is and which order when not known, then
    answer the read-only facts (model-phrased) or start the cancel, address, return or
    exchange flow."""
    state = ctx.state
    service = ctx.orders()
    order_id = slots.get("order_id") or find_order_id(ctx.text)
    if not ctx.customer_id:
        state.update(
            awaiting="identity",
            pending_intent=intent,
            pending_slots={"order_id": order_id} if order_id else {},
        )
        return say(ctx, "dialogue", "ask_identity", label=intent)
    if not order_id:
        picked = order_pick(ctx, intent)
        if isinstance(picked, AnswerPlan):
            return picked
        order_id = picked
    if intent in RETURN_INTENTS:
        return return_start(ctx, intent, order_id)
    order = service.order_get(customer_id=ctx.customer_id, order_id=order_id)
    if order is None:
        # Same words whether the order doesn't exist or belongs to someone else.
        return say(
            ctx, "dialogue", "order_not_found", {"order_id": display_id(order_id)}, label=intent
        )
    state["last_order_id"] = order.order_id
    facts = order_facts(order, ctx.language)
    if intent in (rt.ORDER_STATUS, rt.DELIVERY_TIME):
        if is_late(order):
            # Past its estimated date and not delivered: say so, apologise, and list
            # what the shopper can do (track it, wait, cancel while pending, a person).
            key = "late_pending" if order.status == "pending" else "late"
            return phrase(ctx, intent, key, facts | {"late": LATE_TEXT[reply_language(ctx)]})
        return phrase(ctx, intent, order.status.replace(" ", "_"), facts)
    if intent == rt.REFUND_STATUS:
        return phrase(ctx, intent, "refunded" if order.refunds else "none", facts)
    if intent == rt.CANCEL_ORDER:
        return cancel_start(ctx, order, facts)
    if intent == rt.CHANGE_ADDRESS:
        return address_start(ctx, order, facts)
    return say(ctx, "dialogue", "clarify", tier=rt.CLARIFY, label=rt.OUT_OF_SCOPE)


def _greeting_key(text: str) -> str:
    t = text.lower()
    if any(w in t for w in ("thank", "thx", "谢谢", "感谢", "多谢")):
        return "thanks"
    if any(w in t for w in ("bye", "goodbye", "see you", "再见", "拜拜")):
        return "bye"
    return "hello"
