"""The L2 answerer: questions answered from the knowledge base.

``plan`` first looks for an approved answer card (``knowledge.cards``): a match is
sent as it is, with its citation and no model. Otherwise it retrieves and builds the
generation request (``knowledge.answer.answer_plan``); with nothing relevant it says
it doesn't know and offers the large tier or a person (the dialogue remembers the
offer). ``stream`` runs the model under the entailment guard
(``reply_guards.EntailmentGuard``): each sentence is shown only once the cited passages
back it. A finished, checked answer is cached under the knowledge-base version, so
an edited article or a reviewed card never leaves a stale answer behind; if the
model fails, an extract of the best passage goes out.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, cast

from django.conf import settings

from inference import cache, state
from routing import types as rt

from .base import AnswerPlan, GuardedAnswerer, Reply, TurnContext, TurnEvent, text_answer
from .reply_guards import EntailmentGuard, Guard

logger = logging.getLogger(__name__)


@dataclass
class L2Plan(AnswerPlan):
    # The passages the answer is written from (docs/protocol.md, "citations").
    citations: list[dict[str, Any]] = field(default_factory=list)
    # What the entailment guard checks each sentence against (knowledge.answer): the
    # question, the cited passages' text and an extract to fall back on.
    grounding: dict[str, Any] | None = None
    # Why those passages (keywords, scores, timings, the card); stored in the metadata.
    retrieval: dict[str, Any] = field(default_factory=dict)
    # Where the checked answer is cached ("" : not cached).
    answer_key: str = ""

    def cited(self) -> list[dict[str, Any]]:
        return self.citations

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.citations:
            out["citations"] = self.citations
        if self.retrieval:
            out["retrieval"] = self.retrieval
        return out


def answer_key(*, question: str, language: str, kb_version: tuple[int, str]) -> str:
    """The checked-answer cache key: the question as typed (normalised), its language
    and the knowledge-base version with its timestamp. Every article change and card
    review bumps the version, so nothing cached before it can be served after it."""
    material = f"{cache.normalise(question).lower()}\0{language}\0{kb_version[0]}\0{kb_version[1]}"
    return state.key("l2answer", hashlib.sha256(material.encode()).hexdigest())


class L2Answerer(GuardedAnswerer):
    tier = rt.L2

    def plan(self, ctx: TurnContext, decision: rt.RouteDecision) -> AnswerPlan:
        from knowledge.answer import DONT_KNOW, OFFER_ACTIONS, KnowledgeAnswer, answer_plan
        from knowledge.index import KB_VERSION

        try:
            answer = answer_plan(question=ctx.text, language=ctx.language)
        except Exception as exc:  # an index or embedder fault must not become a guess
            logger.exception("knowledge retrieval failed")
            lang = ctx.language if ctx.language in DONT_KNOW else "en"
            answer = KnowledgeAnswer(
                language=lang,
                text=DONT_KNOW[lang],
                actions=list(OFFER_ACTIONS),
                retrieval={"answered": False, "error": type(exc).__name__},
            )
        key = ""
        if answer.generation is not None and settings.TIERDESK_RESPONSE_CACHE:
            key = answer_key(
                question=ctx.text,
                language=answer.language,
                kb_version=cast(tuple[int, str], KB_VERSION.read()),
            )
        return L2Plan(
            tier=rt.L2,
            intent=decision.intent,
            text=answer.text,
            language=ctx.language,
            generation=answer.generation,
            role=answer.role,
            actions=answer.actions,
            citations=answer.citations,
            retrieval=answer.retrieval,
            grounding=answer.grounding,
            answer_key=key,
            pointed=answer.pointed,
        )

    def guards(self, plan: AnswerPlan) -> list[Guard]:
        from knowledge.answer import DONT_KNOW

        if not isinstance(plan, L2Plan) or plan.grounding is None:
            return []
        g = plan.grounding
        return [
            EntailmentGuard(
                question=g["question"],
                passages=g["passages"],
                extract=g["extract"],
                dont_know=DONT_KNOW.get(plan.language, DONT_KNOW["en"]),
                pointed=g.get("pointed"),
            )
        ]

    async def stream(self, plan: AnswerPlan, reply: Reply) -> AsyncIterator[TurnEvent]:
        key = plan.answer_key if isinstance(plan, L2Plan) else ""
        if key:
            hit = await cache.cache_get(key)
            if hit:
                reply.meta["cached"] = True
                reply.guard = "passed"  # it was checked before it was stored
                async for event in text_answer(hit, reply):
                    yield event
                return
        async for event in super().stream(plan, reply):
            yield event
        if key and reply.fallback is None and reply.text and reply.guard in ("passed", "trimmed"):
            # Only what the entailment guard let through is stored.
            await cache.cache_set(key, reply.text)
