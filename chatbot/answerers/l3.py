"""The L3 answerer: the large model answers open questions from the shop's records.

``plan`` (worker thread) gathers what the question needs (``l3_records.shop_context``:
the shopper's own orders, the catalogue rows it names, relevant help-article
passages) and puts it in the prompt with the recent conversation (heat-decayed).
With nothing relevant on record it doesn't call the model: it says it can't confirm
that and offers a person.

``stream`` runs the model under ``reply_guards.GroundedGuard``: each sentence is shown only
if its order facts are in the records and its claims are entailed by them; model
boilerplate is dropped. When nothing survives, the same "can't confirm, would you
like a person?" text goes out, and a "yes" next turn queues the shopper for a person.
The leak guard watches every chat reply; if the model is down, ``dialogue.model_down``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import transaction

from inference.base import GenerationRequest
from inference.context import history_select
from inference.prompts import SYSTEM_PROMPT, chat_messages, l3_question
from inference.sanitize import prompt_sanitize
from routing import types as rt
from routing.templates import template_render

from .base import (
    AnswerPlan,
    GuardedAnswerer,
    Reply,
    TurnContext,
    TurnEvent,
    model_answer,
    template_text,
    text_answer,
)
from .l3_records import SUMMARY_LINES, shop_context
from .offers import OFFER_HUMAN
from .reply_guards import GroundedGuard, Guard

L3_SEED = 13
logger = logging.getLogger(__name__)


@dataclass
class L3Plan(AnswerPlan):
    # What the grounded guard checks against: the question, the records as passages
    # and the text to send when nothing is backed (None: the guard is off).
    grounding: dict[str, Any] | None = None
    # The help-article passages in the records (docs/protocol.md, "citations").
    citations: list[dict[str, Any]] = field(default_factory=list)
    # What went into the records and why (no personal data): stored in the metadata.
    context: dict[str, Any] = field(default_factory=dict)
    # The quoted section's citation, cited only if the pointed text goes out.
    pointed_citations: list[dict[str, Any]] = field(default_factory=list)

    def pointed_sent(self) -> None:
        self.citations = [*self.pointed_citations, *self.citations]

    def cited(self) -> list[dict[str, Any]]:
        return self.citations

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"l3_context": self.context} if self.context else {}
        if self.citations:
            out["citations"] = self.citations
        return out


def handoff_offer_remember(conversation_id: int) -> None:
    """The reply offered a person after planning (the guard abstained): remember the
    offer like ``Dialogue._offers_remember`` does, so a "yes" next turn queues."""
    from chatbot.models import Conversation

    with transaction.atomic():
        conversation = Conversation.objects.select_for_update().filter(pk=conversation_id).first()
        if conversation is None:
            return
        state = dict(conversation.state or {})
        state["pending_handoff"] = {"at": time.time()}
        conversation.state = state
        conversation.save(update_fields=["state"])


def _pointed_fallback(
    question: str, language: str
) -> tuple[str, dict[str, Any], list[dict[str, Any]]] | None:
    """The quote of the section the question is clearly about (``knowledge.pointing``):
    its text, marker and citation; None when no section is (blocking: embeds)."""
    from knowledge.pointing import clearly_about, pointed_text

    try:
        pointer = clearly_about(question, language)
    except Exception:  # the index or embedder down: the plain "can't answer now"
        logger.exception("pointing unavailable for L3's fallback text")
        return None
    if pointer is None:
        return None
    return (
        pointed_text(question, language, pointer),
        pointer.record("l3_degraded"),
        [pointer.passage.citation()],
    )


class L3Answerer(GuardedAnswerer):
    tier = rt.L3

    def plan(self, ctx: TurnContext, decision: rt.RouteDecision) -> AnswerPlan:
        system = SYSTEM_PROMPT.get(ctx.language, SYSTEM_PROMPT["en"])
        question = prompt_sanitize(ctx.text)
        # Heat-decay context (inference.context): cold turns drop out of the prompt.
        history, heat = history_select(
            history=[(r, prompt_sanitize(t)) for r, t in ctx.history[-6:]],
            question=question,
            heat_state=ctx.state.get("context_heat"),
            decay=settings.TIERDESK_CONTEXT_DECAY,
            drop_below=settings.TIERDESK_CONTEXT_DROP_BELOW,
            budget_chars=settings.TIERDESK_CONTEXT_HISTORY_CHARS,
        )
        ctx.state["context_heat"] = heat
        customer_id = ctx.verified.customer_id if ctx.verified else ctx.customer_id
        shop = shop_context(
            question=question, language=ctx.language, customer_id=customer_id, service=ctx.orders()
        )
        abstain = template_text(ctx, "dialogue", "l3_abstain")
        extract = shop.extract()
        guarded = settings.TIERDESK_L3_GROUNDING_GUARD
        common: dict[str, Any] = {
            "tier": decision.tier,
            "intent": decision.intent,
            "language": ctx.language,
            "personal": shop.personal,
            "citations": shop.citations,
            "context": shop.explain,
        }
        if guarded and shop.empty:
            # Nothing on record to answer from: say so rather than let the model guess.
            return L3Plan(text=abstain, actions=[OFFER_HUMAN], **common)
        messages = chat_messages(
            system=system,
            history=history,
            question=l3_question(records=shop.text(), question=question, language=ctx.language),
        )
        # When no model can answer in time (degraded, or the model fails before a word):
        # for a question one help-article section is clearly about, that section quoted
        # with the offer of a person, rather than "can't answer that myself right now".
        pointed = None if shop.personal else _pointed_fallback(question, ctx.language)
        return L3Plan(
            pointed=pointed[1] if pointed else None,
            pointed_citations=pointed[2] if pointed else [],
            text=pointed[0] if pointed else template_text(ctx, "dialogue", "model_down"),
            role="large" if decision.tier == rt.L3 else "fallback",
            # Low temperature and a fixed seed, as L2's reader: an answer from records
            # has one right wording, and the same records and question give the same
            # reply (a shop can reproduce what its bot said; tests are repeatable).
            generation=GenerationRequest(
                messages=messages,
                max_tokens=settings.TIERDESK_L3_MAX_TOKENS,
                temperature=0.1,
                seed=L3_SEED,
            ),
            grounding={
                "question": question,
                "passages": shop.passages(),
                # Nothing backed: what the records plainly say, then "can't confirm the
                # rest, would you like a person?" (or just that, with nothing to say).
                "abstain": template_render(
                    template_text(ctx, "dialogue", "l3_records"), {"records": extract}
                )
                if extract
                else abstain,
                "rule": shop.kb_extract,
            }
            if guarded
            else None,
            **common,
        )

    def guards(self, plan: AnswerPlan) -> list[Guard]:
        if not isinstance(plan, L3Plan) or plan.grounding is None:
            return []
        g = plan.grounding
        return [
            GroundedGuard(
                question=g["question"],
                passages=g["passages"],
                abstain=g["abstain"],
                rule=g.get("rule", ""),
                bare=SUMMARY_LINES,
            )
        ]

    async def stream(self, plan: AnswerPlan, reply: Reply) -> AsyncIterator[TurnEvent]:
        if plan.generation is None:
            async for event in text_answer(plan.text, reply):
                yield event
            return
        guards = self.guards(plan)
        async for event in model_answer(plan, reply, guards):
            yield event
        if reply.guard == "abstained" and OFFER_HUMAN not in plan.actions:
            # The done frame and the stored reply carry the offer; the state remembers it.
            plan.actions.append(OFFER_HUMAN)
            if reply.conversation_id:
                await database_sync_to_async(handoff_offer_remember)(reply.conversation_id)
