"""The clarify tier: the router isn't sure (or the question is out of scope), so the
bot asks what the shopper means. A template; no model."""

from __future__ import annotations

from routing import types as rt

from .base import AnswerPlan, GuardedAnswerer, TurnContext, say


def clarify(ctx: TurnContext) -> AnswerPlan:
    return say(
        ctx, "dialogue", "clarify", tier=rt.CLARIFY, actions=["clarify"], label=rt.OUT_OF_SCOPE
    )


class ClarifyAnswerer(GuardedAnswerer):
    tier = rt.CLARIFY

    def plan(self, ctx: TurnContext, decision: rt.RouteDecision) -> AnswerPlan:
        return clarify(ctx)
