"""The L3 answerer: the large model answers open questions, with a system prompt that
forbids inventing policy, the recent conversation (heat-decayed) and the shopper's
question. The leak guard (``guards.LeakGuard``) watches every chat reply; if the model
is down, the ``dialogue.model_down`` template goes out."""

from __future__ import annotations

from django.conf import settings

from inference.base import GenerationRequest
from inference.context import history_select
from inference.prompts import SYSTEM_PROMPT, chat_messages
from inference.sanitize import prompt_sanitize
from routing import types as rt

from .base import AnswerPlan, GuardedAnswerer, TurnContext, template_text


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
        messages = chat_messages(system=system, history=history, question=question)
        return AnswerPlan(
            tier=decision.tier,
            intent=decision.intent,
            text=template_text(ctx, "dialogue", "model_down"),
            language=ctx.language,
            role="large" if decision.tier == rt.L3 else "fallback",
            generation=GenerationRequest(
                messages=messages, max_tokens=settings.TIERDESK_L3_MAX_TOKENS, temperature=0.3
            ),
        )
