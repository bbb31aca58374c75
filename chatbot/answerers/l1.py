"""The L1 answerer: order questions and the shop's small talk, from templates and the
shop's order data.

``plan`` answers greetings, account help and shipping costs, and the order intents
(status, delivery time, refund, cancel, change address, return, exchange): it looks
the order up for the verified shopper, asks for what is missing (identity, which
order, the new address, which items, what to swap them for) and picks the template
for the order's case. Read-only facts
(``PHRASED_INTENTS``) are phrased by the fast model from a few-shot prompt, under the
fact guard (``guards.FactGuard``); anything else is the template text. Cancelling,
changing an address, returning and exchanging are only ever confirmed here;
``action_perform`` runs them after the shopper's explicit yes (the dialogue decides
when).
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field, replace
from datetime import date
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.utils import timezone

from chatbot.orders.policy import RETURN_WINDOW_DAYS, return_deadline, within_return_window
from chatbot.orders.types import (
    Address,
    OrderFacts,
    OrderItem,
    OrderNotAllowed,
    OrderNotFound,
    OrderServiceError,
    ReturnFacts,
)
from inference.base import GenerationRequest
from inference.prompts import EXAMPLE_FACTS, l1_prompt
from routing import types as rt
from routing.order_ids import order_id_find
from routing.templates import placeholders, template_render

from .base import AnswerPlan, GuardedAnswerer, TurnContext, say, template_text
from .clarify import clarify
from .guards import FactGuard, Guard

logger = logging.getLogger(__name__)

# Facts that must appear in a model-phrased reply when its template uses them ("late":
# a late order's reply must say so, whatever else the model rewords).
REQUIRED_KEYS = {"order_id", "status_text", "carrier", "tracking", "eta", "refund", "total", "late"}
# A price in a rendered fact ("$50.00").
_MONEY = re.compile(r"\$\d+(?:\.\d+)?")
# Intents whose templated answer the fast model may phrase (read-only facts).
PHRASED_INTENTS = {rt.ORDER_STATUS, rt.DELIVERY_TIME, rt.REFUND_STATUS, rt.SHIPPING_COST}

STATUS_TEXT = {
    "en": {
        "pending": "pending",
        "processed": "shipped",
        "delivered": "delivered",
        "cancelled": "cancelled",
        "return requested": "return requested",
        "exchange requested": "exchange requested",
    },
    "zh": {
        "pending": "待处理",
        "processed": "已发货",
        "delivered": "已送达",
        "cancelled": "已取消",
        "return requested": "已申请退货",
        "exchange requested": "已申请换货",
    },
}
PAYMENT_TEXT = {
    "en": {"credit_card": "credit card", "gift_card": "gift card", "paypal": "PayPal account"},
    "zh": {"credit_card": "信用卡", "gift_card": "礼品卡", "paypal": "PayPal账户"},
}
# The word that calls an order late; a fact, so the fact guard requires it.
LATE_TEXT = {"en": "late", "zh": "延误"}
# The carriers' public tracking pages: a late order's reply links to its tracking.
CARRIER_TRACKING_URLS = {
    "UPS": "https://www.ups.com/track?tracknum={tracking}",
    "FedEx": "https://www.fedex.com/fedextrack/?trknbr={tracking}",
    "USPS": "https://tools.usps.com/go/TrackConfirmAction?tLabels={tracking}",
    "DHL": "https://www.dhl.com/global-en/home/tracking.html?tracking-id={tracking}",
}
# Statuses whose estimated delivery can pass without the order arriving.
OPEN_STATUSES = {"pending", "processed"}

# A delivery-time question about delivery in general (the shop's shipping times), not
# about one of the shopper's orders: it asks how long delivery takes, usually or to a
# place, and names no order of theirs. Anything else keeps the order's own estimate.
_GENERAL_DELIVERY = re.compile(
    r"\b(?:usually|normally|generally|typically|in general|on average)\b"
    r"|\bhow (?:long|fast|quick(?:ly)?|soon|many (?:business |working )?days)\b.*"
    r"\b(?:deliver\w*|ship\w*|post\w*)\b"
    r"|\b(?:deliver\w*|ship\w*)\b.*\bto (?:[a-z]{3,}|\d{5})"
    r"|一般|通常|平时|(?:送到|寄到|发到|运到|配送到).{0,12}(?:几天|多久|多长时间|几个工作日)"
    r"|(?:配送|送货|快递|发货|邮寄).{0,6}(?:需要|要)?(?:几天|多久|多长时间)",
    re.IGNORECASE,
)
# Words that point at the shopper's own order ("my order", "will it arrive", "我的").
# "it" in "how long does it take" is no order, so it doesn't count.
_OWN_ORDER = re.compile(
    r"\b(?:my|mine|i|me|our|we|us|they|them)\b|\bit\b(?! (?:usually |normally )?takes?\b)"
    r"|我的|我买|我下|单号|它",
    re.IGNORECASE,
)

# The store policy's cancellation reasons (tau-bench retail wiki): the shopper gives
# one; the bot never assumes it. Keys are what the order system records.
CANCEL_REASONS = ("no longer needed", "ordered by mistake")
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
_ADDRESS = re.compile(
    r"^(?P<a1>[^,]+?),\s*(?:(?P<a2>[^,]+?),\s*)?(?P<city>[^,]+?),\s*(?P<state>[A-Za-z]{2})\s+(?P<zip>\d{5})\s*\.?$"
)


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
            plan = phrase(ctx, rt.SHIPPING_COST, "default", {"options": options})
            # Each price and free-shipping threshold is a fact the reply must keep: the
            # fast model's "Standard $5.99 (3-7 business days); Express $14.99" dropped
            # "free over $50.00", the answer to "when do I stop paying for postage?".
            required = [*plan.guard_required, *_MONEY.findall(options)]
            return replace(plan, guard_required=required)
        if intent == rt.DELIVERY_TIME and is_general_delivery(ctx.text, dict(decision.slots)):
            return delivery_estimate(ctx)
        if intent in rt.ORDER_INTENTS:
            return order_intent(ctx, intent, dict(decision.slots))
        return clarify(ctx)

    def guards(self, plan: AnswerPlan) -> list[Guard]:
        if not isinstance(plan, L1Plan) or plan.guard_facts is None:
            return []
        return [
            FactGuard(facts=plan.guard_facts, required=plan.guard_required, template_text=plan.text)
        ]


# Flows that quote the shop's rule when the knowledge base has one for the message.
RULE_INTENTS = frozenset((*rt.ORDER_INTENTS, rt.ACCOUNT_HELP))


def with_rule(ctx: TurnContext, decision: rt.RouteDecision, plan: AnswerPlan) -> AnswerPlan:
    """The flow's reply with the shop's rule for the message before it.

    Routing can't tell every question about the rule ("can I still return my order
    after 30 days?", "how long does shipping take for my order?") from a request to act
    on an order, so the order flows cite the knowledge base themselves: an approved
    card's answer, or the article's own sentences when a passage holds the question
    (``knowledge.answer.rule_answer``), then the flow's own step (asking who the
    shopper is, which order...). Account help answers from the articles alone: its
    template is generic. A model-phrased reply (order facts under the fact guard), a
    message naming an order id and a routing rule's decision keep the flow's reply."""
    if (
        decision.intent not in RULE_INTENTS
        or plan.generation is not None
        or decision.reason.get("kind") == "rule"
        or find_order_id(ctx.text)
    ):
        return plan
    from knowledge.answer import rule_answer
    from routing.knowledge_route import is_question

    try:
        rule = rule_answer(question=ctx.text, language=ctx.language, judge=is_question(ctx.text))
    except Exception:  # an index fault leaves the flow's own reply, never a guess
        logger.exception("knowledge base unavailable to the %s flow", decision.intent)
        return plan
    if rule is None:
        return _without_rule(ctx, plan) if decision.intent in rt.ORDER_INTENTS else plan
    if decision.intent == rt.ACCOUNT_HELP:
        text = rule.text
    elif plan.text == template_text(ctx, "dialogue", "ask_identity"):
        # "I can help with that. First, ..." reads wrong after an answer.
        text = f"{rule.text}\n\n{template_text(ctx, 'dialogue', 'ask_identity_also')}"
    else:
        text = f"{rule.text}\n\n{plan.text}"
    return L1Plan(
        tier=plan.tier,
        intent=plan.intent,
        text=text,
        language=plan.language,
        actions=plan.actions,
        personal=plan.personal,
        citations=rule.citations,
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
    text = template_render(template, facts)
    keys = [k for k in placeholders(template) if facts.get(k)]
    base_example = EXAMPLE_FACTS.get(lang, EXAMPLE_FACTS["en"])
    example_facts = base_example | {
        "status_text": facts.get("status_text", ""),
        "late": facts.get("late", ""),
        "track_url": tracking_url(base_example["carrier"], base_example["tracking"]),
    }
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
    )


def order_intent(ctx: TurnContext, intent: str, slots: dict[str, str]) -> AnswerPlan:
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
    if intent in RETURN_INTENTS:
        return return_start(ctx, intent, order_id)
    if not order_id:
        orders = service.orders_for_customer(customer_id=ctx.customer_id)
        if not orders:
            return say(ctx, "dialogue", "no_orders", label=intent)
        if len(orders) == 1:
            order_id = orders[0].order_id
        elif state.get("last_order_id") and intent != rt.CANCEL_ORDER:
            order_id = state["last_order_id"]
        else:
            state.update(awaiting="order", pending_intent=intent)
            status_words = STATUS_TEXT.get(ctx.language, STATUS_TEXT["en"])
            listing = ", ".join(
                f"{o.order_id} ({status_words.get(o.status, o.status)})" for o in orders[:10]
            )
            return say(
                ctx, "dialogue", "ask_order", {"orders": listing}, personal=True, label=intent
            )
    order = service.order_get(customer_id=ctx.customer_id, order_id=order_id)
    if order is None:
        # Same words whether the order doesn't exist or belongs to someone else.
        return say(
            ctx, "dialogue", "order_not_found", {"order_id": _display_id(order_id)}, label=intent
        )
    state["last_order_id"] = order.order_id
    facts = order_facts(order, ctx.language)
    if intent in (rt.ORDER_STATUS, rt.DELIVERY_TIME):
        if is_late(order):
            # Past its estimated date and not delivered: say so, apologise, and list
            # what the shopper can do (track it, wait, cancel while pending, a person).
            key = "late_pending" if order.status == "pending" else "late"
            plan = phrase(ctx, intent, key, facts | {"late": LATE_TEXT[_lang(ctx)]})
            plan.actions = [OFFER_HUMAN]
            return plan
        return phrase(ctx, intent, order.status.replace(" ", "_"), facts)
    if intent == rt.REFUND_STATUS:
        return phrase(ctx, intent, "refunded" if order.refunds else "none", facts)
    if intent == rt.CANCEL_ORDER:
        if order.status != "pending":
            return refuse(ctx, intent, order, facts)
        reason = cancel_reason_find(ctx.text)
        if reason:
            return cancel_confirm(ctx, order, reason)
        # The store policy needs the shopper's reason; ask, never assume it.
        state.update(awaiting="cancel_reason", cancel_order_id=order.order_id)
        return say(ctx, intent, "ask_reason", facts, personal=True)
    if intent == rt.CHANGE_ADDRESS:
        if order.status != "pending":
            return refuse(ctx, intent, order, facts)
        address = parse_address(ctx.text)
        if address is not None:
            return address_confirm(ctx, order.order_id, address)
        state.update(awaiting="address", address_order_id=order.order_id)
        return say(ctx, intent, "ask_address", facts, personal=True)
    return say(ctx, "dialogue", "clarify", tier=rt.CLARIFY, label=rt.OUT_OF_SCOPE)


# What a reply offers, in its actions; the dialogue remembers it, so a "yes" next turn
# accepts it (chatbot/dialogue.py).
OFFER_HUMAN = "offer:human"
OFFER_STATUS = "offer:status"
OFFER_RETURN = "offer:return"


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
    reason = cancel_reason_find(ctx.text)
    if not reason:
        return None
    order = ctx.orders().order_get(customer_id=ctx.customer_id, order_id=order_id)
    if order is None:
        return say(
            ctx, "dialogue", "order_not_found", {"order_id": order_id}, label=rt.CANCEL_ORDER
        )
    if order.status != "pending":
        return refuse(ctx, rt.CANCEL_ORDER, order, order_facts(order, ctx.language))
    return cancel_confirm(ctx, order, reason)


def is_late(order: OrderFacts) -> bool:
    """Past its estimated delivery date and neither delivered nor cancelled."""
    eta = order.estimated_delivery
    return order.status in OPEN_STATUSES and eta is not None and eta < timezone.localdate()


def is_general_delivery(text: str, slots: dict[str, str]) -> bool:
    """A question about delivery times in general, not about one of the shopper's orders."""
    if slots.get("order_id") or find_order_id(text):
        return False
    return bool(_GENERAL_DELIVERY.search(text)) and not _OWN_ORDER.search(text)


# A destination the shopper names ("to Austin", "to 73301", 寄到北京): then their own
# address is not what they asked about.
_NAMED_PLACE = re.compile(
    r"\bto (?!(?:my|me|us|our|you|your|the|a|an|here|home|it|them)\b)"
    r"([a-z]{3,}(?: [a-z]{3,})?|\d{5})"
    r"|(?:送到|寄到|发到|运到|配送到)(?!我)",
    re.IGNORECASE,
)


def _asks_elsewhere(text: str, city: str) -> bool:
    """The question names a destination other than the shopper's own city."""
    match = _NAMED_PLACE.search(text)
    if match is None:
        return False
    place = (match.group(1) or "").lower()
    return not (place and city.lower().startswith(place.split()[0]))


def delivery_estimate(ctx: TurnContext) -> AnswerPlan:
    """How long delivery takes, from the shop's shipping options; to the verified
    shopper's city (their latest order's address) when we know it. No order is looked
    up as the answer, and no identity is needed."""
    facts = {"options": delivery_times_text(ctx)}
    key = "estimate"
    if ctx.customer_id:
        orders = ctx.orders().orders_for_customer(customer_id=ctx.customer_id)
        latest = max(orders, key=lambda o: o.placed_on, default=None)
        if (
            latest is not None
            and latest.address.city
            and not _asks_elsewhere(ctx.text, latest.address.city)
        ):
            facts |= {"city": latest.address.city, "state": latest.address.state}
            key = "estimate_city"
    return say(ctx, rt.DELIVERY_TIME, key, facts, personal=key == "estimate_city")


def delivery_times_text(ctx: TurnContext) -> str:
    """The shipping options as delivery times: "Standard ($5.99) takes 3-7 business
    days; Express ($14.99) takes 1-2 business days"."""
    parts = []
    for opt in ctx.orders().shipping_options():
        if ctx.language == "zh":
            parts.append(
                f"{opt.name}（${fmt_money(opt.price)}）{opt.days_min}-{opt.days_max}个工作日"
            )
        else:
            parts.append(
                f"{opt.name} (${fmt_money(opt.price)}) takes "
                f"{opt.days_min}-{opt.days_max} business days"
            )
    return ("；" if ctx.language == "zh" else "; ").join(parts)


def tracking_url(carrier: str, tracking: str) -> str:
    template = CARRIER_TRACKING_URLS.get(carrier)
    return template.format(tracking=tracking) if template and tracking else ""


def address_confirm(ctx: TurnContext, order_id: str, address: Address) -> AnswerPlan:
    order = ctx.orders().order_get(customer_id=ctx.customer_id, order_id=order_id)
    if order is None:
        return say(
            ctx, "dialogue", "order_not_found", {"order_id": order_id}, label=rt.CHANGE_ADDRESS
        )
    facts = order_facts(order, ctx.language) | {
        "address": address.one_line(),
        "old_address": order.address.one_line(),
    }
    ctx.state["pending_action"] = {
        "type": "change_address",
        "order_id": order.order_id,
        "at": time.time(),
        "address": address.__dict__,
    }
    return say(ctx, rt.CHANGE_ADDRESS, "confirm", facts, actions=["confirm"], personal=True)


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


# -- returns and exchanges (store policy: chatbot/orders/policy.py) ----------------------------

RETURN_INTENTS = (rt.RETURN_ITEM, rt.EXCHANGE_ITEM)
RETURNABLE = "delivered"
_MAX_VARIANTS_LISTED = 10
_ALL_ITEMS = re.compile(
    r"\b(?:all|both|everything|every item|the whole order|all of them)\b"
    r"|全部|所有|整单|都退|都换|都要|两件都|两个都",
    re.IGNORECASE,
)
_NUMBER_WORDS = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
}
_NUMBER = re.compile(
    r"(?<![\d#w])(\d{1,2})(?!\d)|\b(first|second|third|fourth|fifth)\b|第([一二三四五])"
)


def _returns_facts(ctx: TurnContext, order: OrderFacts) -> dict[str, str]:
    deadline = return_deadline(order.placed_on)
    return order_facts(order, ctx.language) | {
        "window_days": str(RETURN_WINDOW_DAYS),
        "deadline": fmt_date(deadline, _lang(ctx)),
        "placed_on": fmt_date(order.placed_on, _lang(ctx)),
    }


def _options_text(options: dict[str, str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in options.items())


def _item_line(item: OrderItem) -> str:
    options = _options_text(item.options)
    return f"{item.name} ({options}, ${fmt_money(item.price)})" if options else item.name


def _numbered(lines: list[str], language: str) -> str:
    sep = "；" if language == "zh" else "; "
    return sep.join(f"{n}. {line}" for n, line in enumerate(lines, start=1))


def return_start(ctx: TurnContext, intent: str, order_id: str) -> AnswerPlan:
    """Start a return or exchange: pick the delivered order (only the verified
    shopper's, through the order service), check it against the policy, then list its
    items and ask which ones."""
    service, state = ctx.orders(), ctx.state
    if not order_id:
        orders = service.orders_for_customer(customer_id=ctx.customer_id)
        delivered = [o for o in orders if o.status == RETURNABLE]
        if not orders:
            return say(ctx, "dialogue", "no_orders", label=intent)
        if not delivered:
            return say(ctx, intent, "no_delivered", personal=True)
        if len(delivered) == 1:
            order_id = delivered[0].order_id
        else:
            state.update(awaiting="order", pending_intent=intent)
            # By order id, as the order question's answer is read (dialogue: "order").
            listing = ("；" if ctx.language == "zh" else "; ").join(
                f"{o.order_id} ({', '.join(i.name for i in o.items)})" for o in delivered[:10]
            )
            return say(ctx, intent, "ask_order", {"orders": listing}, personal=True)
    order = service.order_get(customer_id=ctx.customer_id, order_id=order_id)
    if order is None:
        return say(
            ctx, "dialogue", "order_not_found", {"order_id": _display_id(order_id)}, label=intent
        )
    state["last_order_id"] = order.order_id
    facts = _returns_facts(ctx, order)
    refusal = _return_refusal(order)
    if refusal:
        return say(ctx, intent, refusal, facts, personal=True)
    items = list(order.items)
    picked = _items_in_text(ctx.text, items, numbers=False)
    if len(items) == 1:
        picked = items
    if picked:
        return return_items_chosen(ctx, intent, order, picked)
    state.update(
        awaiting="return_items",
        return_flow={"intent": intent, "order_id": order.order_id, "at": time.time()},
    )
    listing = _numbered([_item_line(item) for item in items], ctx.language)
    return say(ctx, intent, "ask_items", facts | {"item_list": listing}, personal=True)


def _return_refusal(order: OrderFacts) -> str:
    """The template key saying why this order can't be returned now, or ""."""
    if order.status in ("return requested", "exchange requested"):
        return "already"
    if order.status != RETURNABLE:
        return f"not_delivered_{order.status}" if order.status in OPEN_STATUSES else "not_delivered"
    if not within_return_window(order.placed_on, timezone.localdate()):
        return "outside_window"
    return ""


def _items_in_text(text: str, items: list[OrderItem], *, numbers: bool = True) -> list[OrderItem]:
    """The order's items the shopper named: by number in the list, "all", or name."""
    if _ALL_ITEMS.search(text):
        return list(items)
    cleaned = re.sub(r"#?\s?w\s?\d{6,12}", " ", text, flags=re.IGNORECASE)
    picked: list[OrderItem] = []
    if numbers:
        for match in _NUMBER.finditer(cleaned.lower()):
            digits, word, zh = match.groups()
            n = int(digits) if digits else _NUMBER_WORDS[word or zh]
            if 1 <= n <= len(items) and items[n - 1] not in picked:
                picked.append(items[n - 1])
    lowered = cleaned.lower()
    for item in items:
        if item.name and item.name.lower() in lowered and item not in picked:
            picked.append(item)
    return picked


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
    amount = sum((item.price for item in items), Decimal("0.00"))
    facts = _returns_facts(ctx, order) | {
        "items": ", ".join(_item_line(item) for item in items),
        "amount": fmt_money(amount),
    }
    ctx.state["pending_action"] = {
        "type": "return",
        "order_id": order.order_id,
        "item_ids": [item.item_id for item in items],
        "at": time.time(),
    }
    return say(ctx, rt.RETURN_ITEM, "confirm", facts, actions=["confirm"], personal=True)


def exchange_ask_next(ctx: TurnContext, order: OrderFacts) -> AnswerPlan:
    """Ask what the next item without a choice should be swapped for, listing the
    available options of the same product (the store data's variants)."""
    state = ctx.state
    flow = state["exchange_flow"]
    by_id = {item.item_id: item for item in order.items}
    facts = _returns_facts(ctx, order)
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
        listing = _numbered(
            [
                f"{_options_text(_changed_options(item, v)) or _options_text(v.options)} "
                f"(${fmt_money(v.price)})"
                for v in variants
            ],
            ctx.language,
        )
        return say(
            ctx,
            rt.EXCHANGE_ITEM,
            "ask_variant",
            facts | {"item": _item_line(item), "variant_list": listing},
            personal=True,
        )
    state.pop("awaiting", None)
    return exchange_confirm(ctx, order, state.pop("exchange_flow"))


def _changed_options(item: OrderItem, variant: OrderItem) -> dict[str, str]:
    return {k: v for k, v in variant.options.items() if item.options.get(k) != v}


def variant_in_text(text: str, variants: list[OrderItem]) -> OrderItem | None:
    """The option the shopper picked: its number in the list ("2", "the second"), or
    the one whose option values the message names most ("size 10, black"), if that is
    a single best. A bare number is the list's; "size 10" is an option, not item 10."""
    numbers = [int(d) if d else _NUMBER_WORDS[w or z] for d, w, z in _NUMBER.findall(text.lower())]
    bare = re.fullmatch(r"\W*(?:no\.?\s*|number\s*|#)?\d{1,2}\W*|\W*第.\W*", text.lower())
    if bare and len(numbers) == 1 and 1 <= numbers[0] <= len(variants):
        return variants[numbers[0] - 1]
    lowered = f" {re.sub(r'[,;.!?，。]', ' ', text.lower())} "
    scores = [
        sum(1 for value in v.options.values() if f" {value.lower()} " in lowered) for v in variants
    ]
    best = max(scores, default=0)
    if best and scores.count(best) == 1:
        return variants[scores.index(best)]
    if len(numbers) == 1 and 1 <= numbers[0] <= len(variants):
        return variants[numbers[0] - 1]
    return None


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
        changed = _options_text(_changed_options(item, new))
        was = _options_text(_changed_options(new, item))
        swaps.append(f"{item.name} ({was} → {changed}, ${fmt_money(new.price)})")
        difference += new.price - item.price
    facts = _returns_facts(ctx, order) | {
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
    picked = _items_in_text(ctx.text, list(order.items))
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
        facts = _returns_facts(ctx, order_now) if order_now else {"order_id": order_id}
        key = _REFUSAL_KEYS.get(exc.code, "refused")
        return say(ctx, intent, key, facts | {"reason": str(exc)}, personal=True)
    plan = say(ctx, intent, "done", _return_done_facts(ctx, result), personal=True)
    plan.actions = ["performed:" + action["type"]]
    if not result.created:
        plan.actions.append("repeat")
    return plan


def _return_done_facts(ctx: TurnContext, result: ReturnFacts) -> dict[str, str]:
    lang = _lang(ctx)
    return {
        "order_id": result.order_id,
        "items": ", ".join(item.name for item in result.items),
        "amount": fmt_money(abs(result.amount)),
        "payment_method": PAYMENT_TEXT[lang].get(result.payment_method, result.payment_method),
        "refund_timing": refund_timing(result.payment_method, lang),
    }


def refund_timing(payment_method: str, lang: str) -> str:
    """When a refund arrives, per the store policy: a gift card at once."""
    gift = payment_method == "gift_card"
    return {
        "en": "immediately" if gift else "within 5 to 7 business days",
        "zh": "立即到账" if gift else "5到7个工作日内",
    }[lang]


def shipping_text(ctx: TurnContext) -> str:
    parts = []
    for opt in ctx.orders().shipping_options():
        if ctx.language == "zh":
            text = f"{opt.name} ${fmt_money(opt.price)}（{opt.days_min}-{opt.days_max}个工作日"
            text += f"，满${fmt_money(opt.free_over)}免运费）" if opt.free_over else "）"
        else:
            days = f"{opt.days_min}-{opt.days_max} business days"
            text = f"{opt.name} ${fmt_money(opt.price)} ({days}"
            text += f", free over ${fmt_money(opt.free_over)})" if opt.free_over else ")"
        parts.append(text)
    return "; ".join(parts)


def fmt_date(value: date | None, language: str) -> str:
    if value is None:
        return ""
    if language == "zh":
        return f"{value.year}年{value.month}月{value.day}日"
    return value.strftime("%b ") + str(value.day) + value.strftime(", %Y")


def fmt_money(value: Decimal) -> str:
    return f"{value:.2f}"


def order_facts(order: OrderFacts, language: str) -> dict[str, str]:
    lang = language if language in STATUS_TEXT else "en"
    timing = refund_timing(order.payment_method, lang)
    return {
        "order_id": order.order_id,
        "status": order.status,
        "status_text": STATUS_TEXT[lang].get(order.status, order.status),
        "item_count": str(len(order.items)),
        "items": ", ".join(item.name for item in order.items),
        "total": fmt_money(order.total),
        "carrier": order.carrier,
        "tracking": order.tracking_ids[0] if order.tracking_ids else "",
        "eta": fmt_date(order.estimated_delivery, lang),
        "refund": fmt_money(sum(order.refunds, Decimal(0))),
        "payment_method": PAYMENT_TEXT[lang].get(order.payment_method, order.payment_method),
        "refund_timing": timing,
        "address": order.address.one_line(),
        "track_url": tracking_url(
            order.carrier, order.tracking_ids[0] if order.tracking_ids else ""
        ),
    }


def _lang(ctx: TurnContext) -> str:
    return ctx.language if ctx.language in STATUS_TEXT else "en"


def find_order_id(text: str) -> str:
    return order_id_find(text) or ""


def _display_id(order_id: str) -> str:
    return order_id_find(order_id) or order_id[:20]


def _greeting_key(text: str) -> str:
    t = text.lower()
    if any(w in t for w in ("thank", "thx", "谢谢", "感谢", "多谢")):
        return "thanks"
    if any(w in t for w in ("bye", "goodbye", "see you", "再见", "拜拜")):
        return "bye"
    return "hello"


def parse_address(text: str) -> Address | None:
    match = _ADDRESS.match(text.strip())
    if not match:
        return None
    return Address(
        address1=match["a1"].strip(),
        address2=(match["a2"] or "").strip(),
        city=match["city"].strip(),
        state=match["state"].upper(),
        zip=match["zip"],
    )
