"""The L2 answerer: questions answered from the knowledge base.

``plan`` retrieves and builds the generation request in one step
(``knowledge.answer.answer_plan``); with nothing relevant it says it doesn't know and
offers the large tier or a person (the dialogue remembers the offer). ``stream`` runs
the model and then the grounding guard (``guards.GroundingGuard``) on the finished
answer; if the model fails, an extract of the best passage goes out.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from routing import types as rt

from .base import AnswerPlan, GuardedAnswerer, TurnContext
from .guards import GroundingGuard, Guard

logger = logging.getLogger(__name__)


@dataclass
class L2Plan(AnswerPlan):
    # The passages the answer is written from (docs/protocol.md, "citations").
    citations: list[dict[str, Any]] = field(default_factory=list)
    # What the grounding guard checks the finished answer against (knowledge.answer):
    # the question, the cited passages' text and an extract to fall back on.
    grounding: dict[str, Any] | None = None
    # Why those passages (keywords, scores, timings); stored in the reply metadata.
    retrieval: dict[str, Any] = field(default_factory=dict)

    def cited(self) -> list[dict[str, Any]]:
        return self.citations

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.citations:
            out["citations"] = self.citations
        if self.retrieval:
            out["retrieval"] = self.retrieval
        return out


class L2Answerer(GuardedAnswerer):
    tier = rt.L2

    def plan(self, ctx: TurnContext, decision: rt.RouteDecision) -> AnswerPlan:
        from knowledge.answer import DONT_KNOW, OFFER_ACTIONS, KnowledgeAnswer, answer_plan

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
        )

    def guards(self, plan: AnswerPlan) -> list[Guard]:
        if not isinstance(plan, L2Plan) or plan.grounding is None:
            return []
        g = plan.grounding
        return [
            GroundingGuard(question=g["question"], passages=g["passages"], extract=g["extract"])
        ]
