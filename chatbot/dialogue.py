"""One turn's decision: what to say and who phrases it (synchronous, no model calls).

The dialogue decides from the conversation state, the router and the shop's order
data. It returns a ``ReplyPlan``: either a final deterministic text, or a generation
request for a model plus the template text to fall back on. Actions that change data
(cancel, change address) run here as deterministic code, and only after the shopper
answered an explicit confirmation; the model never decides or performs them.
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

from chatbot.orders.backends import get_order_service
from chatbot.orders.identity import customer_match_from_text
from chatbot.orders.types import (
    Address,
    Customer,
    OrderFacts,
    OrderNotAllowed,
    OrderNotFound,
    OrderService,
    OrderServiceError,
)
from inference.base import GenerationRequest
from inference.context import history_select
from inference.prompts import EXAMPLE_FACTS, SYSTEM_PROMPT, chat_messages, l1_prompt
from inference.sanitize import prompt_sanitize
from routing import types as rt
from routing.order_ids import order_id_find
from routing.router import route_message
from routing.templates import placeholders, template_get, template_get_exact, template_render

logger = logging.getLogger(__name__)

PENDING_ACTION_TTL_S = 600  # a "yes" more than 10 minutes later confirms nothing
# Facts that must appear in a model-phrased reply when its template uses them.
REQUIRED_KEYS = {"order_id", "status_text", "carrier", "tracking", "eta", "refund", "total"}
# Intents whose templated answer the fast model may phrase (read-only facts).
PHRASED_INTENTS = {rt.ORDER_STATUS, rt.DELIVERY_TIME, rt.REFUND_STATUS, rt.SHIPPING_COST}

STATUS_TEXT = {
    "en": {
        "pending": "pending",
        "processed": "shipped",
        "delivered": "delivered",
        "cancelled": "cancelled",
    },
    "zh": {
        "pending": "待处理",
        "processed": "已发货",
        "delivered": "已送达",
        "cancelled": "已取消",
    },
}
PAYMENT_TEXT = {
    "en": {"credit_card": "credit card", "gift_card": "gift card", "paypal": "PayPal account"},
    "zh": {"credit_card": "信用卡", "gift_card": "礼品卡", "paypal": "PayPal账户"},
}
_YES = {
    "yes",
    "y",
    "yeah",
    "yep",
    "yup",
    "sure",
    "ok",
    "okay",
    "confirm",
    "confirmed",
    "do it",
    "yes please",
    "please do",
    "go ahead",
    "是",
    "是的",
    "确认",
    "好",
    "好的",
    "可以",
    "对",
    "嗯",
    "确定",
}
_NO = {
    "no",
    "n",
    "nope",
    "nah",
    "don't",
    "dont",
    "do not",
    "keep it",
    "never mind",
    "stop",
    "否",
    "不",
    "不要",
    "不用",
    "算了",
    "取消操作",
    "别",
}
_ADDRESS = re.compile(
    r"^(?P<a1>[^,]+?),\s*(?:(?P<a2>[^,]+?),\s*)?(?P<city>[^,]+?),\s*(?P<state>[A-Za-z]{2})\s+(?P<zip>\d{5})\s*\.?$"
)


@dataclass
class ReplyPlan:
    tier: str
    intent: str
    # Final text (deterministic replies) or the template text the guard falls back on.
    text: str
    language: str
    generation: GenerationRequest | None = None
    role: str = "fast"
    guard_facts: dict[str, str] | None = None
    guard_required: list[str] = field(default_factory=list)
    # Uses a shopper's personal data: never cached (SPEC, response cache).
    personal: bool = False
    actions: list[str] = field(default_factory=list)
    confidence: float | None = None
    route_reason: dict[str, Any] = field(default_factory=dict)
    route_ms: float = 0.0
    error_code: str = ""
    # L2: the passages the answer is written from (docs/protocol.md, "citations").
    citations: list[dict[str, Any]] = field(default_factory=list)
    # L2: what the grounding guard checks the finished answer against (knowledge.answer).
    grounding: dict[str, Any] | None = None
    # L2: why those passages (keywords, scores, timings); stored in the reply metadata.
    retrieval: dict[str, Any] = field(default_factory=dict)


@dataclass
class TurnContext:
    text: str
    language: str
    state: dict[str, Any]
    customer_id: str
    history: list[tuple[str, str]]
    # Set when the shopper verified in this turn, with how ("email" / "name_zip").
    verified: Customer | None = None
    verified_method: str = ""
    # From the session's release (releases): the router's clarify threshold
    # (None: the setting) and the reply templates' version ("" : the plain keys).
    clarify_threshold: float | None = None
    prompt_version: str = ""


def _norm_reply(text: str) -> str:
    return re.sub(r"[\s!.。！,，~]+$", "", text.strip().lower())


def is_yes(text: str) -> bool:
    t = _norm_reply(text)
    return t in _YES or t.startswith(("yes ", "yes,", "confirm ", "是的"))


def is_no(text: str) -> bool:
    t = _norm_reply(text)
    return t in _NO or t.startswith(("no ", "no,", "don't ", "不要"))


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
    gift = order.payment_method == "gift_card"
    timing = {
        "en": "immediately" if gift else "within 5 to 7 business days",
        "zh": "立即到账" if gift else "5到7个工作日内",
    }[lang]
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
    }


class Dialogue:
    """Plans one reply. Holds the turn's context; ``state`` is mutated in place."""

    def __init__(self, ctx: TurnContext, service: OrderService | None = None) -> None:
        self.ctx = ctx
        self.service = service or get_order_service()
        self.lang = ctx.language

    # -- helpers --------------------------------------------------------------------------
    def _t(self, intent: str, key: str) -> str:
        if self.ctx.prompt_version:
            # A release's template version ("default-v2") wins where admins wrote one.
            versioned = template_get_exact(
                intent=intent, key=f"{key}-{self.ctx.prompt_version}", language=self.lang
            )
            if versioned is not None:
                return versioned
        return template_get(intent=intent, key=key, language=self.lang)

    def _say(
        self,
        intent: str,
        key: str,
        facts: dict[str, str] | None = None,
        *,
        tier: str = rt.L1,
        actions: list[str] | None = None,
        personal: bool = False,
        label: str = "",
    ) -> ReplyPlan:
        """A deterministic reply from template ``intent.key``; ``label`` is the intent
        recorded for the turn when it differs (shared "dialogue" texts)."""
        text = template_render(self._t(intent, key), facts or {})
        return ReplyPlan(
            tier=tier,
            intent=label or intent,
            text=text,
            language=self.lang,
            actions=actions or [],
            personal=personal,
        )

    def _phrase(self, intent: str, key: str, facts: dict[str, str]) -> ReplyPlan:
        """A templated answer that the fast model phrases, guarded by the facts."""
        template = self._t(intent, key)
        text = template_render(template, facts)
        keys = [k for k in placeholders(template) if facts.get(k)]
        example_facts = EXAMPLE_FACTS.get(self.lang, EXAMPLE_FACTS["en"]) | {
            "status_text": facts.get("status_text", ""),
        }
        prompt = l1_prompt(
            template=template,
            keys=keys,
            facts=facts,
            example_facts=example_facts,
            example_reply=template_render(template, example_facts),
            language=self.lang,
            # Compressed instruction + facts (spaCy; we are in a worker thread here).
            # The guard below still checks against the uncompressed facts.
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
        return ReplyPlan(
            tier=rt.L1,
            intent=intent,
            text=text,
            language=self.lang,
            generation=generation,
            role="fast",
            # With the guard off (a shop's choice, e.g. for a stronger fast model) the
            # model's text goes out unchecked.
            guard_facts={k: facts[k] for k in keys} if settings.TIERDESK_FACT_GUARD else None,
            guard_required=required,
            personal=intent != rt.SHIPPING_COST,
        )

    # -- entry point ----------------------------------------------------------------------
    def plan(self) -> ReplyPlan:
        state = self.ctx.state
        try:
            if settings.TIERDESK_ROUTING == "l3_only":
                return self._l3_only()
            handled = self._continue_pending(state)
            if handled is not None:
                return handled
            started = time.perf_counter()
            decision = route_message(
                text=self.ctx.text,
                language=self.lang,
                clarify_threshold=self.ctx.clarify_threshold,
            )
            route_ms = (time.perf_counter() - started) * 1000
            plan = self._answer(decision)
            plan.confidence = decision.confidence
            plan.route_reason = decision.reason
            plan.route_ms = route_ms
            return plan
        except OrderServiceError as exc:
            plan = self._say("dialogue", "order_system_down")
            plan.error_code = exc.code
            return plan

    def _l3_only(self) -> ReplyPlan:
        """Routing off (``TIERDESK_ROUTING=l3_only``): the large tier answers every
        message. The router still runs so the turn records what it would have chosen."""
        started = time.perf_counter()
        decision = route_message(
            text=self.ctx.text,
            language=self.lang,
            clarify_threshold=self.ctx.clarify_threshold,
        )
        reason = {"kind": "routing_off", "routed_tier": decision.tier, "routed": decision.reason}
        plan = self._open_question(replace(decision, tier=rt.L3, reason=reason))
        plan.confidence = decision.confidence
        plan.route_reason = reason
        plan.route_ms = (time.perf_counter() - started) * 1000
        return plan

    def _continue_pending(self, state: dict[str, Any]) -> ReplyPlan | None:
        """Answers that depend on what the bot asked last turn."""
        offer = state.pop("pending_offer", None)
        fresh = offer and time.time() - float(offer.get("at", 0)) <= PENDING_ACTION_TTL_S
        if fresh and is_yes(self.ctx.text):
            # L2 found nothing and offered the large tier: the shopper accepted.
            self.ctx.text = str(offer.get("question", self.ctx.text))
            decision = rt.RouteDecision(
                tier=rt.L3,
                intent=rt.COMPLEX_QUESTION,
                confidence=1.0,
                reason={"kind": "escalation", "from": rt.L2},
            )
            plan = self._open_question(decision)
            plan.route_reason = decision.reason
            return plan
        action = state.get("pending_action")
        if action:
            if time.time() - float(action.get("at", 0)) > PENDING_ACTION_TTL_S:
                state.pop("pending_action", None)
            elif is_yes(self.ctx.text):
                state.pop("pending_action", None)
                return self._perform(action)
            elif is_no(self.ctx.text):
                state.pop("pending_action", None)
                intent = rt.CANCEL_ORDER if action["type"] == "cancel" else rt.CHANGE_ADDRESS
                return self._say(intent, "declined", {"order_id": action["order_id"]})
            else:
                # Anything but a clear yes/no drops the action: a later "yes" to some
                # other question must never cancel an order.
                state.pop("pending_action", None)
        awaiting = state.get("awaiting")
        if awaiting == "identity":
            match = customer_match_from_text(text=self.ctx.text, service=self.service)
            if match is not None:
                customer = match.customer
                self.ctx.verified_method = match.method
                self.ctx.customer_id = customer.customer_id
                self.ctx.verified = customer
                state.pop("awaiting", None)
                intent = state.pop("pending_intent", None)
                slots = state.pop("pending_slots", {}) or {}
                greeting = template_render(
                    self._t("dialogue", "identity_ok"), {"first_name": customer.first_name}
                )
                if intent:
                    plan = self._order_intent(intent, slots)
                    plan.text = f"{greeting} {plan.text}" if plan.generation is None else plan.text
                    return plan
                return ReplyPlan(tier=rt.L1, intent="verify", text=greeting, language=self.lang)
            if re.search(r"@|\b\d{5}\b", self.ctx.text):
                return self._say("dialogue", "identity_failed", tier=rt.L1, label="verify")
            state.pop("awaiting", None)  # the shopper moved on; route normally
        elif awaiting == "address":
            order_id = state.get("address_order_id", "")
            address = parse_address(self.ctx.text)
            state.pop("awaiting", None)
            if address is not None and order_id:
                return self._confirm_address(order_id, address)
            if re.search(r"\d", self.ctx.text) and "," in self.ctx.text:
                state["awaiting"] = "address"
                return self._say(rt.CHANGE_ADDRESS, "bad_address")
        elif awaiting == "order":
            intent = str(state.get("pending_intent") or "")
            order_id = _find_order_id(self.ctx.text)
            state.pop("awaiting", None)
            if intent and order_id:
                state.pop("pending_intent", None)
                return self._order_intent(intent, {"order_id": order_id})
        return None

    def _answer(self, decision: rt.RouteDecision) -> ReplyPlan:
        intent = decision.intent
        if decision.tier == rt.CLARIFY:
            return self._say(
                "dialogue", "clarify", tier=rt.CLARIFY, actions=["clarify"], label=rt.OUT_OF_SCOPE
            )
        if decision.tier in (rt.L2, rt.L3):
            return self._open_question(decision)
        if intent == rt.GREETING:
            key = _greeting_key(self.ctx.text)
            return self._say(rt.GREETING, key)
        if intent == rt.ACCOUNT_HELP:
            return self._say(rt.ACCOUNT_HELP, "default")
        if intent == rt.SHIPPING_COST:
            return self._phrase(rt.SHIPPING_COST, "default", {"options": self._shipping_text()})
        if intent in rt.ORDER_INTENTS:
            return self._order_intent(intent, dict(decision.slots))
        return self._say(
            "dialogue", "clarify", tier=rt.CLARIFY, actions=["clarify"], label=rt.OUT_OF_SCOPE
        )

    def _knowledge(self, decision: rt.RouteDecision) -> ReplyPlan:
        """L2: retrieval and the generation request in one step (knowledge.answer)."""
        from knowledge.answer import DONT_KNOW, OFFER_ACTIONS, KnowledgeAnswer, answer_plan

        try:
            answer = answer_plan(question=self.ctx.text, language=self.lang)
        except Exception as exc:  # an index or embedder fault must not become a guess
            logger.exception("knowledge retrieval failed")
            lang = self.lang if self.lang in DONT_KNOW else "en"
            answer = KnowledgeAnswer(
                language=lang,
                text=DONT_KNOW[lang],
                actions=list(OFFER_ACTIONS),
                retrieval={"answered": False, "error": type(exc).__name__},
            )
        if not answer.answered:
            self.ctx.state["pending_offer"] = {"question": self.ctx.text, "at": time.time()}
        return ReplyPlan(
            tier=rt.L2,
            intent=decision.intent,
            text=answer.text,
            language=self.lang,
            generation=answer.generation,
            role=answer.role,
            actions=answer.actions,
            citations=answer.citations,
            retrieval=answer.retrieval,
            grounding=answer.grounding,
        )

    def _open_question(self, decision: rt.RouteDecision) -> ReplyPlan:
        """L3 questions (and L2 when it is not answered from the knowledge base): the
        large role answers, with a system prompt that forbids inventing policy."""
        if decision.tier == rt.L2:
            return self._knowledge(decision)
        system = SYSTEM_PROMPT.get(self.lang, SYSTEM_PROMPT["en"])
        question = prompt_sanitize(self.ctx.text)
        # Heat-decay context (inference.context): cold turns drop out of the prompt.
        history, heat = history_select(
            history=[(r, prompt_sanitize(t)) for r, t in self.ctx.history[-6:]],
            question=question,
            heat_state=self.ctx.state.get("context_heat"),
            decay=settings.TIERDESK_CONTEXT_DECAY,
            drop_below=settings.TIERDESK_CONTEXT_DROP_BELOW,
            budget_chars=settings.TIERDESK_CONTEXT_HISTORY_CHARS,
        )
        self.ctx.state["context_heat"] = heat
        messages = chat_messages(system=system, history=history, question=question)
        role = "large" if decision.tier == rt.L3 else "fallback"
        return ReplyPlan(
            tier=decision.tier,
            intent=decision.intent,
            text=self._t("dialogue", "model_down"),
            language=self.lang,
            role=role,
            generation=GenerationRequest(
                messages=messages, max_tokens=settings.TIERDESK_L3_MAX_TOKENS, temperature=0.3
            ),
        )

    # -- order intents ----------------------------------------------------------------------
    def _order_intent(self, intent: str, slots: dict[str, str]) -> ReplyPlan:
        state = self.ctx.state
        order_id = slots.get("order_id") or _find_order_id(self.ctx.text)
        if not self.ctx.customer_id:
            state.update(
                awaiting="identity",
                pending_intent=intent,
                pending_slots={"order_id": order_id} if order_id else {},
            )
            return self._say("dialogue", "ask_identity", label=intent)
        if not order_id:
            orders = self.service.orders_for_customer(customer_id=self.ctx.customer_id)
            if not orders:
                return self._say("dialogue", "no_orders", label=intent)
            if len(orders) == 1:
                order_id = orders[0].order_id
            elif state.get("last_order_id") and intent != rt.CANCEL_ORDER:
                order_id = state["last_order_id"]
            else:
                state.update(awaiting="order", pending_intent=intent)
                status_words = STATUS_TEXT.get(self.lang, STATUS_TEXT["en"])
                listing = ", ".join(
                    f"{o.order_id} ({status_words.get(o.status, o.status)})" for o in orders[:10]
                )
                return self._say(
                    "dialogue", "ask_order", {"orders": listing}, personal=True, label=intent
                )
        order = self.service.order_get(customer_id=self.ctx.customer_id, order_id=order_id)
        if order is None:
            # Same words whether the order doesn't exist or belongs to someone else.
            return self._say(
                "dialogue", "order_not_found", {"order_id": _display_id(order_id)}, label=intent
            )
        state["last_order_id"] = order.order_id
        facts = order_facts(order, self.lang)
        if intent == rt.ORDER_STATUS:
            return self._phrase(intent, order.status, facts)
        if intent == rt.DELIVERY_TIME:
            return self._phrase(intent, order.status, facts)
        if intent == rt.REFUND_STATUS:
            return self._phrase(intent, "refunded" if order.refunds else "none", facts)
        if intent == rt.CANCEL_ORDER:
            if order.status != "pending":
                return self._say(intent, "not_allowed", facts, personal=True)
            state["pending_action"] = {
                "type": "cancel",
                "order_id": order.order_id,
                "at": time.time(),
            }
            return self._say(intent, "confirm", facts, actions=["confirm"], personal=True)
        if intent == rt.CHANGE_ADDRESS:
            if order.status != "pending":
                return self._say(intent, "not_allowed", facts, personal=True)
            address = parse_address(self.ctx.text)
            if address is not None:
                return self._confirm_address(order.order_id, address)
            state.update(awaiting="address", address_order_id=order.order_id)
            return self._say(intent, "ask_address", facts, personal=True)
        return self._say("dialogue", "clarify", tier=rt.CLARIFY, label=rt.OUT_OF_SCOPE)

    def _confirm_address(self, order_id: str, address: Address) -> ReplyPlan:
        order = self.service.order_get(customer_id=self.ctx.customer_id, order_id=order_id)
        if order is None:
            return self._say(
                "dialogue", "order_not_found", {"order_id": order_id}, label=rt.CHANGE_ADDRESS
            )
        facts = order_facts(order, self.lang) | {
            "address": address.one_line(),
            "old_address": order.address.one_line(),
        }
        self.ctx.state["pending_action"] = {
            "type": "change_address",
            "order_id": order.order_id,
            "at": time.time(),
            "address": address.__dict__,
        }
        return self._say(rt.CHANGE_ADDRESS, "confirm", facts, actions=["confirm"], personal=True)

    def _perform(self, action: dict[str, Any]) -> ReplyPlan:
        """Deterministic code performs the confirmed action; the model is not involved."""
        customer_id, order_id = self.ctx.customer_id, str(action["order_id"])
        intent = rt.CANCEL_ORDER if action["type"] == "cancel" else rt.CHANGE_ADDRESS
        try:
            if action["type"] == "cancel":
                order = self.service.order_cancel(
                    customer_id=customer_id, order_id=order_id, reason="no longer needed"
                )
            else:
                order = self.service.order_change_address(
                    customer_id=customer_id, order_id=order_id, address=Address(**action["address"])
                )
        except OrderNotFound:
            return self._say("dialogue", "order_not_found", {"order_id": order_id}, label=intent)
        except OrderNotAllowed:
            order_now = self.service.order_get(customer_id=customer_id, order_id=order_id)
            facts = order_facts(order_now, self.lang) if order_now else {"order_id": order_id}
            return self._say(intent, "not_allowed", facts, personal=True)
        plan = self._say(intent, "done", order_facts(order, self.lang), personal=True)
        plan.actions = ["performed:" + action["type"]]
        return plan

    def _shipping_text(self) -> str:
        parts = []
        for opt in self.service.shipping_options():
            if self.lang == "zh":
                text = f"{opt.name} ${fmt_money(opt.price)}（{opt.days_min}-{opt.days_max}个工作日"
                text += f"，满${fmt_money(opt.free_over)}免运费）" if opt.free_over else "）"
            else:
                days = f"{opt.days_min}-{opt.days_max} business days"
                text = f"{opt.name} ${fmt_money(opt.price)} ({days}"
                text += f", free over ${fmt_money(opt.free_over)})" if opt.free_over else ")"
            parts.append(text)
        return "; ".join(parts)


def _find_order_id(text: str) -> str:
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
