"""The conversation state machine: which answerer answers this turn, and with what.

The dialogue runs synchronously in the turn's worker thread (no model calls). It
continues what the bot asked last turn (a pending confirmation, the large tier it
offered, the identity, order or address it asked for), else calls the router and
hands the decision to the tier's answerer (``chatbot.answerers``), which returns the
``AnswerPlan``. Actions that change data (cancel, change address, return, exchange)
run only after the shopper answered an explicit confirmation; the model never decides
or performs them. A role-play or jailbreak attempt gets the in-role template
(``role_play``), never a model reply.
"""

from __future__ import annotations

import re
import time
from dataclasses import replace
from typing import Any

from django.conf import settings

from chatbot.orders.identity import (
    CodeUnavailable,
    code_check,
    code_in_text,
    code_send,
    customer_match_from_text,
    postcodes_in_text,
    proof_is_strong,
)
from chatbot.orders.types import Customer, OrderService, OrderServiceError
from routing import types as rt
from routing.knowledge_route import knowledge_route
from routing.router import route_message
from routing.templates import template_render

from .answerers import answerer_for
from .answerers.address_parse import address_format_text, parse_address
from .answerers.base import AnswerPlan, TurnContext, say, template_text
from .answerers.flows.address_change import address_confirm
from .answerers.flows.cancel import cancel_reason_given, cancel_reason_options
from .answerers.flows.exchange import exchange_variant_given
from .answerers.flows.perform import action_perform
from .answerers.flows.returns import return_items_given
from .answerers.l1 import order_intent
from .answerers.l3_records import l3_adds_records
from .answerers.offers import OFFER_HUMAN, OFFER_RETURN, OFFER_STATUS
from .answerers.order_format import STATUS_TEXT, find_order_id
from .answerers.reply_match import Option, reply_pick
from .answerers.yes_no import is_no, is_yes
from .handoff_dialogue import (
    HANDOFF_INTENT,
    handoff_continue,
    handoff_offer,
    handoff_offer_if_stuck,
)

PENDING_ACTION_TTL_S = 600  # a "yes" more than 10 minutes later confirms nothing

# The intent whose "declined" template answers a "no" to each confirmed action.
_ACTION_INTENTS = {
    "cancel": rt.CANCEL_ORDER,
    "change_address": rt.CHANGE_ADDRESS,
    "return": rt.RETURN_ITEM,
    "exchange": rt.EXCHANGE_ITEM,
}


def _short(text: str) -> bool:
    """An answer to the question rather than a new one: a few words, no order id, not
    itself a question ("what does shipping cost?" is routed as usual)."""
    asks = "?" in text or "？" in text
    return len(text.split()) <= 6 and len(text) <= 40 and not asks and not find_order_id(text)


class Dialogue:
    """Plans one reply. Holds the turn's context; ``state`` is mutated in place."""

    def __init__(self, ctx: TurnContext, service: OrderService | None = None) -> None:
        self.ctx = ctx
        if service is not None:
            ctx.service = service
        self.service = ctx.orders()
        self.lang = ctx.language

    # -- entry point ----------------------------------------------------------------------
    def plan(self) -> AnswerPlan:
        state = self.ctx.state
        try:
            if settings.TIERDESK_ROUTING == "l3_only":
                return self._l3_only()
            handled = self._continue_pending(state)
            if handled is not None:
                return self._offers_remember(handled)
            started = time.perf_counter()
            decision = route_message(
                text=self.ctx.text,
                language=self.lang,
                clarify_threshold=self.ctx.clarify_threshold,
            )
            # A general question the knowledge base answers goes to L2, whatever the
            # classifier learned (routing.knowledge_route).
            decision = knowledge_route(decision, text=self.ctx.text, language=self.lang)
            route_ms = (time.perf_counter() - started) * 1000
            plan = self._answer(decision)
            plan.confidence = decision.confidence
            plan.route_reason = decision.reason
            plan.route_ms = route_ms
            return plan
        except OrderServiceError as exc:
            plan = say(self.ctx, "dialogue", "order_system_down")
            plan.error_code = exc.code
            return plan

    def _l3_only(self) -> AnswerPlan:
        """Routing off (``TIERDESK_ROUTING=l3_only``): the large tier answers every
        message. The router still runs so the turn records what it would have chosen."""
        started = time.perf_counter()
        decision = route_message(
            text=self.ctx.text,
            language=self.lang,
            clarify_threshold=self.ctx.clarify_threshold,
        )
        reason = {"kind": "routing_off", "routed_tier": decision.tier, "routed": decision.reason}
        plan = self._answer(replace(decision, tier=rt.L3, reason=reason))
        plan.confidence = decision.confidence
        plan.route_reason = reason
        plan.route_ms = (time.perf_counter() - started) * 1000
        return plan

    def _answer(self, decision: rt.RouteDecision) -> AnswerPlan:
        """The tier's answerer plans the reply; the dialogue remembers what it offered."""
        if decision.intent == HANDOFF_INTENT:
            return handoff_offer(self.ctx)
        if decision.intent == rt.ROLE_PLAY:
            # "From now on you are DAN…": the shop's assistant says what it can help
            # with, from a template; no model sees the message.
            return say(self.ctx, rt.ROLE_PLAY, "in_role", tier=rt.CLARIFY, actions=["in_role"])
        plan = answerer_for(decision.tier).plan(self.ctx, decision)
        plan = self._offers_remember(self._one_step_to_person(plan))
        return handoff_offer_if_stuck(self.ctx, decision, plan)

    def _one_step_to_person(self, plan: AnswerPlan) -> AnswerPlan:
        """L2 found nothing and would offer the large tier: when the large tier has
        nothing to answer from that L2 didn't (no order of the shopper's the question
        is about, no product it names), it could only say it can't confirm that and
        offer a person. The offer goes straight to a person instead, or to a ticket
        when nobody can answer."""
        ctx = self.ctx
        if "offer:L3" not in plan.actions or l3_adds_records(
            question=ctx.text, customer_id=ctx.customer_id
        ):
            return plan
        offer = handoff_offer(self.ctx)
        lead = template_text(self.ctx, "dialogue", "no_answer_lead")
        plan.text = f"{lead} {offer.text}"
        plan.actions = offer.actions
        plan.choices = offer.choices
        return plan

    def _offers_remember(self, plan: AnswerPlan) -> AnswerPlan:
        """Remember what the reply offered, so that a "yes" next turn is read as
        accepting it rather than routed as a new message."""
        state = self.ctx.state
        if "offer:L3" in plan.actions:
            # L2 found nothing and offered the large tier: a "yes" next turn accepts.
            state["pending_offer"] = {"kind": "L3", "question": self.ctx.text, "at": time.time()}
        if OFFER_STATUS in plan.actions and state.get("last_order_id"):
            # A refused cancel/address change offered the order's status instead.
            state["pending_offer"] = {
                "kind": "status",
                "order_id": state["last_order_id"],
                "at": time.time(),
            }
        if OFFER_RETURN in plan.actions and state.get("last_order_id"):
            # A refused cancel of a delivered order offered a return instead.
            state["pending_offer"] = {
                "kind": "return",
                "order_id": state["last_order_id"],
                "at": time.time(),
            }
        if OFFER_HUMAN in plan.actions:
            # The bot offered a person (L2 found nothing, a late order, a refusal):
            # a "yes" next turn queues.
            state["pending_handoff"] = {"at": time.time()}
        if plan.choices or "confirm" in plan.actions:
            # The question and its options, to ask again when a reply picks none.
            if plan.route_reason.get("kind") != "ask_again":
                state["asked"] = {
                    "text": plan.text,
                    "choices": plan.choices,
                    "actions": plan.actions,
                }
        else:
            state.pop("asked", None)
        return plan

    def _cancel_reason(self, state: dict[str, Any]) -> AnswerPlan | None:
        """The shopper's answer to "why cancel?" (the store policy's two reasons): the
        reasons the bot offered are read before any "no" ("no longer needed" is a
        reason, not a refusal)."""
        ctx = self.ctx
        order_id = str(state.get("cancel_order_id", ""))
        state.pop("awaiting", None)
        plan = cancel_reason_given(ctx, order_id)
        if plan is not None:
            state.pop("cancel_order_id", None)
            state.pop("cancel_reason_asked", None)
            return plan
        if is_no(ctx.text):
            state.pop("cancel_order_id", None)
            state.pop("cancel_reason_asked", None)
            return say(ctx, rt.CANCEL_ORDER, "declined", {"order_id": order_id})
        # A short answer without one of the reasons ("found it cheaper"): say which
        # reasons the store accepts, once, with them as buttons. Anything longer is a
        # new question: route it.
        if _short(ctx.text) and not state.pop("cancel_reason_asked", False):
            state.update(awaiting="cancel_reason", cancel_reason_asked=True)
            plan = say(ctx, rt.CANCEL_ORDER, "reason_unclear", personal=True)
            plan.choices = [option.label for option in cancel_reason_options(ctx)]
            return plan
        state.pop("cancel_order_id", None)
        state.pop("cancel_reason_asked", None)
        return None

    def _return_choice(self, state: dict[str, Any], awaiting: str) -> AnswerPlan | None:
        """The shopper's answer to "which items?" (return, exchange) or "swap it for
        which option?" (exchange): the next question or the confirmation; a "no" ends
        the flow; an unclear short answer is asked again once; anything longer is a new
        message, routed as usual."""
        ctx = self.ctx
        key = "return_flow" if awaiting == "return_items" else "exchange_flow"
        flow = state.get(key) or {}
        intent = str(flow.get("intent", rt.RETURN_ITEM if key == "return_flow" else ""))
        intent = intent or rt.EXCHANGE_ITEM
        state.pop("awaiting", None)
        if time.time() - float(flow.get("at", 0)) > PENDING_ACTION_TTL_S:
            state.pop(key, None)
            return None
        # The options are read first: a "no" is a "no" only when it names none of them.
        if awaiting == "return_items":
            plan = return_items_given(ctx)
            if plan is not None:
                state.pop(key, None)
                return plan
        else:
            state["awaiting"] = awaiting
            plan = exchange_variant_given(ctx)
            if plan is not None:
                return plan
            state.pop("awaiting", None)
        if is_no(ctx.text):
            state.pop(key, None)
            return say(ctx, intent, "declined", {"order_id": str(flow.get("order_id", ""))})
        if _short(ctx.text) and not flow.pop("asked_again", False):
            flow["asked_again"] = True
            state["awaiting"] = awaiting
            plan = say(ctx, intent, "choice_unclear", personal=True)
            plan.choices = [str(c) for c in (state.get("asked") or {}).get("choices") or []]
            return plan
        state.pop(key, None)
        return None

    def _continue_pending(self, state: dict[str, Any]) -> AnswerPlan | None:
        """Answers that depend on what the bot asked last turn."""
        ctx = self.ctx
        if state.get("awaiting") == "code":
            coded = self._code_continue(state)
            if coded is not None:
                return coded
        handoff = handoff_continue(ctx, yes=is_yes(ctx.text), no=is_no(ctx.text))
        if handoff is not None:
            return handoff
        offered = self._offer_continue(state)
        if offered is not None:
            return offered
        confirmed = self._action_continue(state)
        if confirmed is not None:
            return confirmed
        awaiting = state.get("awaiting")
        if awaiting == "identity":
            return self._identity_continue(state)
        if awaiting == "address":
            return self._address_continue(state)
        if awaiting == "cancel_reason":
            return self._cancel_reason(state)
        if awaiting in ("return_items", "exchange_variant"):
            return self._return_choice(state, awaiting)
        if awaiting == "order":
            return self._order_continue(state)
        return None

    def _offer_continue(self, state: dict[str, Any]) -> AnswerPlan | None:
        """The shopper's answer to what the last reply offered (the order's status, a
        return, the large tier); the offer is dropped whatever the answer."""
        ctx = self.ctx
        offer = state.pop("pending_offer", None)
        fresh = offer and time.time() - float(offer.get("at", 0)) <= PENDING_ACTION_TTL_S
        if fresh and offer.get("kind") == "status" and is_yes(ctx.text):
            # The bot refused a change and offered the order's status: the shopper accepted.
            return order_intent(ctx, rt.ORDER_STATUS, {"order_id": str(offer["order_id"])})
        if fresh and offer.get("kind") == "return" and is_yes(ctx.text):
            # The bot refused to cancel a delivered order and offered a return: accepted.
            return order_intent(ctx, rt.RETURN_ITEM, {"order_id": str(offer["order_id"])})
        if fresh and is_no(ctx.text):
            return say(ctx, "dialogue", "offer_declined", label=rt.GREETING)
        if fresh and is_yes(ctx.text):
            # L2 found nothing and offered the large tier: the shopper accepted.
            ctx.text = str(offer.get("question", ctx.text))
            decision = rt.RouteDecision(
                tier=rt.L3,
                intent=rt.COMPLEX_QUESTION,
                confidence=1.0,
                reason={"kind": "escalation", "from": rt.L2},
            )
            plan = self._answer(decision)
            plan.route_reason = decision.reason
            return plan
        return None

    def _action_continue(self, state: dict[str, Any]) -> AnswerPlan | None:
        """The shopper's answer to a confirmation: a yes performs the action (with
        proof), a no declines it, anything else drops it."""
        ctx = self.ctx
        action = state.get("pending_action")
        if not action:
            return None
        if time.time() - float(action.get("at", 0)) > PENDING_ACTION_TTL_S:
            state.pop("pending_action", None)
        elif is_yes(ctx.text):
            state.pop("pending_action", None)
            return self._perform_with_proof(action)
        elif is_no(ctx.text):
            state.pop("pending_action", None)
            intent = _ACTION_INTENTS.get(action["type"], rt.CHANGE_ADDRESS)
            return say(ctx, intent, "declined", {"order_id": action["order_id"]})
        elif _short(ctx.text) and not action.get("asked_again"):
            # A short reply that is neither ("hmm", "what?"): the question again, with
            # its Yes/No, once. Never read as a "no".
            action["asked_again"] = True
            return self._ask_again(label=_ACTION_INTENTS.get(action["type"], rt.CHANGE_ADDRESS))
        else:
            # Anything else drops the action: a later "yes" to some other question
            # must never cancel an order.
            state.pop("pending_action", None)
        return None

    def _identity_continue(self, state: dict[str, Any]) -> AnswerPlan | None:
        """The shopper's answer to "who are you?": bound (or sent a code) on a match,
        told it failed on something that looks like an attempt, else routed anew."""
        ctx = self.ctx
        match = customer_match_from_text(text=ctx.text, service=self.service)
        if match is not None and not settings.TIERDESK_CHAT_IDENTITY_READS:
            # The shop doesn't let a typed email open orders: the conversation is
            # bound to the shopper only once the emailed code comes back.
            state.pop("awaiting", None)
            then = {
                "kind": "intent",
                "intent": state.pop("pending_intent", None),
                "slots": state.pop("pending_slots", {}) or {},
                "method": match.method,
            }
            return self._code_ask(then, match.customer)
        if match is not None:
            customer = match.customer
            ctx.verified_method = match.method
            ctx.customer_id = customer.customer_id
            ctx.verified = customer
            state.pop("awaiting", None)
            intent = state.pop("pending_intent", None)
            slots = state.pop("pending_slots", {}) or {}
            greeting = template_render(
                template_text(ctx, "dialogue", "identity_ok"),
                {"first_name": customer.first_name},
            )
            if intent:
                plan = order_intent(ctx, intent, slots)
                plan.text = f"{greeting} {plan.text}" if plan.generation is None else plan.text
                return plan
            return AnswerPlan(tier=rt.L1, intent="verify", text=greeting, language=self.lang)
        if "@" in ctx.text or postcodes_in_text(ctx.text):
            return say(ctx, "dialogue", "identity_failed", tier=rt.L1, label="verify")
        state.pop("awaiting", None)  # the shopper moved on; route normally
        return None

    def _address_continue(self, state: dict[str, Any]) -> AnswerPlan | None:
        """The shopper's answer to "the new address?": its confirmation, or asked again
        when it looks like an address that doesn't parse."""
        ctx = self.ctx
        order_id = state.get("address_order_id", "")
        address = parse_address(ctx.text)
        state.pop("awaiting", None)
        if address is not None and order_id:
            return address_confirm(ctx, order_id, address)
        if re.search(r"\d", ctx.text) and "," in ctx.text:
            state["awaiting"] = "address"
            form = {"address_format": address_format_text(ctx.language)}
            return say(ctx, rt.CHANGE_ADDRESS, "bad_address", form)
        return None

    def _order_continue(self, state: dict[str, Any]) -> AnswerPlan | None:
        """The shopper's answer to "which order?": the pending intent for the order named
        by id, place in the list ("the first one", 第二个), an item in it ("the
        puzzle") or its date; a short answer that names none is asked again."""
        ctx = self.ctx
        intent = str(state.get("pending_intent") or "")
        listed = [str(i) for i in state.get("order_choices") or []]
        state.pop("awaiting", None)
        order_id = find_order_id(ctx.text)
        if not order_id and intent and listed:
            picked = reply_pick(ctx.text, self._order_options(listed))
            order_id = picked[0].key if picked else ""
        if intent and order_id:
            state.pop("pending_intent", None)
            state.pop("order_choices", None)
            state.pop("order_asked_again", None)
            # The reply answered "which order?": the item names or dates it used to
            # pick the order (a button lists the order's items) pick nothing else.
            ctx.text = order_id
            return order_intent(ctx, intent, {"order_id": order_id})
        unclear = intent and listed and _short(ctx.text) and not is_no(ctx.text)
        if unclear and not state.pop("order_asked_again", False):
            state.update(awaiting="order", order_asked_again=True)
            return self._ask_again(label=intent)
        for key in ("pending_intent", "order_choices", "order_asked_again"):
            state.pop(key, None)
        return None

    def _order_options(self, order_ids: list[str]) -> list[Option]:
        """The listed orders, in the list's order, known by id, items, date and the
        status their button shows ("the pending one")."""
        orders = {
            o.order_id: o
            for o in self.service.orders_for_customer(customer_id=self.ctx.customer_id)
        }
        status_words = STATUS_TEXT.get(self.lang, STATUS_TEXT["en"])
        return [
            Option(
                key=oid,
                label=oid,
                names=(
                    *(item.name for item in orders[oid].items),
                    status_words.get(orders[oid].status, orders[oid].status),
                ),
                day=orders[oid].placed_on,
            )
            for oid in order_ids
            if oid in orders
        ]

    def _ask_again(self, *, label: str) -> AnswerPlan:
        """The last question again, with its options as buttons: a reply that matched
        none of them is never read as a "no"."""
        asked = self.ctx.state.get("asked") or {}
        plan = say(
            self.ctx,
            "dialogue",
            "ask_again",
            {"question": str(asked.get("text") or "")},
            label=label,
            personal=True,
        )
        plan.choices = [str(c) for c in asked.get("choices") or []]
        plan.actions = [a for a in asked.get("actions") or [] if a == "confirm"]
        plan.route_reason = {"kind": "ask_again"}
        return plan

    # -- strong proof before a change (docs/identity.md) -------------------------------------
    def _perform_with_proof(self, action: dict[str, Any]) -> AnswerPlan:
        """Perform a confirmed change only for a shopper who proved who they are: the
        shop's token, or the code emailed to them. A typed email alone never suffices."""
        ctx = self.ctx
        if proof_is_strong(state=ctx.state, identity=ctx.identity, customer_id=ctx.customer_id):
            return action_perform(ctx, action)
        if settings.TIERDESK_ORDER_CHANGE_PROOF == "token":
            return say(ctx, "dialogue", "change_needs_login", tier=rt.L1, label="verify")
        return self._code_ask({"kind": "action", "action": action})

    def _code_ask(self, then: dict[str, Any], customer: Customer | None = None) -> AnswerPlan:
        """Email a one-time code and wait for it; ``then`` is what it unlocks."""
        ctx, state = self.ctx, self.ctx.state
        if customer is None:
            customer = self.service.customer_by_id(customer_id=ctx.customer_id)
        if customer is None or not customer.email:
            return say(ctx, "dialogue", "change_needs_login", tier=rt.L1, label="verify")
        try:
            masked = code_send(state=state, customer=customer, language=self.lang)
        except CodeUnavailable as exc:
            key = "code_locked" if exc.reason == "locked" else "code_too_many"
            return say(ctx, "dialogue", key, tier=rt.L1, label="verify")
        state.update(awaiting="code", code_then=then)
        return say(ctx, "dialogue", "code_sent", {"email": masked}, tier=rt.L1, label="verify")

    def _code_continue(self, state: dict[str, Any]) -> AnswerPlan | None:
        """The shopper's answer to "type the code": check it, then do what it unlocks."""
        ctx = self.ctx
        if code_in_text(ctx.text) is None and not re.search(r"\d", ctx.text):
            # No code in sight: the shopper moved on. Drop the wait (and the code).
            for key in ("awaiting", "code_then", "verify_code"):
                state.pop(key, None)
            return None
        result = code_check(state=state, text=ctx.text)
        if result.outcome == "wrong":
            return say(
                ctx,
                "dialogue",
                "code_wrong",
                {"attempts_left": str(result.attempts_left)},
                tier=rt.L1,
                label="verify",
            )
        state.pop("awaiting", None)
        then = state.pop("code_then", None) or {}
        if result.outcome != "ok":
            key = {"locked": "code_locked", "expired": "code_expired"}.get(
                result.outcome, "code_expired"
            )
            return say(ctx, "dialogue", key, tier=rt.L1, label="verify")
        if then.get("kind") == "action":
            return action_perform(ctx, then["action"])
        if not ctx.customer_id:
            # Identified by email and proved by the code: now bind the conversation.
            customer = self.service.customer_by_id(customer_id=result.customer_id)
            if customer is None:
                return say(ctx, "dialogue", "identity_failed", tier=rt.L1, label="verify")
            ctx.customer_id = customer.customer_id
            ctx.verified = customer
            ctx.verified_method = str(then.get("method") or "email")
        intent = then.get("intent")
        if intent:
            return order_intent(ctx, str(intent), dict(then.get("slots") or {}))
        return say(ctx, "dialogue", "code_ok", tier=rt.L1, label="verify")
