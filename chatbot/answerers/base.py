"""What every answerer shares: the turn's context, the plan, the reply being sent, the
events a turn yields, and the two ways a reply is produced (template text, or a model
stream under guards).

An answerer (``Answerer``) answers for one tier in two steps:

- ``plan(ctx, decision)``: synchronous, in the turn's worker thread (order data,
  retrieval, prompt building; no model calls). Returns an ``AnswerPlan``: the final
  text, or a generation request plus the text to fall back on.
- ``stream(plan, reply)``: asynchronous. Yields ``Chunk`` / ``Replace`` events and fills
  ``reply`` with what was sent and its verdicts (model, usage, guard, fallback), which
  ``chatbot.turn`` stores and puts in the ``done`` frame.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from django.conf import settings

from chatbot.budgets import SessionStatus, session_status
from chatbot.orders.backends import get_order_service
from chatbot.orders.types import Customer, OrderService
from chatbot.threads import in_db_thread
from inference.base import GenerationRequest, InferenceError, Usage
from inference.registry import get_backend
from inference.resilience import RESTART, StreamInfo, model_stream
from routing import types as rt
from routing.templates import template_get, template_get_exact, template_render

from .offers import offers_of

if TYPE_CHECKING:
    from .reply_guards import Guard

logger = logging.getLogger(__name__)


# -- the events a turn yields (the consumer relays them as frames) ---------------------------
@dataclass
class Chunk:
    text: str


@dataclass
class Replace:
    text: str


@dataclass
class Done:
    frame: dict[str, Any]


@dataclass
class Failed:
    code: str
    message: str


TurnEvent = Chunk | Replace | Done | Failed


# -- planning ----------------------------------------------------------------------------
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
    # How the conversation was bound to ``customer_id`` ("token", "email", "name_zip"):
    # only a token is strong enough to change an order without the emailed code.
    identity: str = ""
    # From the session's release (releases): the router's clarify threshold
    # (None: the setting) and the reply templates' version ("" : the plain keys).
    clarify_threshold: float | None = None
    prompt_version: str = ""
    # The shop's order system (None: the configured one, looked up on first use).
    service: OrderService | None = None

    def orders(self) -> OrderService:
        if self.service is None:
            self.service = get_order_service()
        return self.service


@dataclass
class AnswerPlan:
    """What every tier's plan has. Tier-specific data lives in subclasses
    (``l1.L1Plan``: the fact guard's facts; ``l2.L2Plan``: citations, grounding)."""

    tier: str
    intent: str
    # Final text (deterministic replies) or the text to fall back on (the template the
    # fact guard sends, the passage extract, "the model is down").
    text: str
    language: str
    generation: GenerationRequest | None = None
    role: str = "fast"
    # Uses a shopper's personal data: never cached (docs/product.md, response cache).
    personal: bool = False
    actions: list[str] = field(default_factory=list)
    # The options a question offers, as the widget's buttons (the reply's language); a
    # button sends its label, which ``reply_match`` reads back as that option.
    choices: list[str] = field(default_factory=list)
    confidence: float | None = None
    route_reason: dict[str, Any] = field(default_factory=dict)
    route_ms: float = 0.0
    error_code: str = ""
    # VIP and token budget for the model queue, read while planning (same thread hop):
    # None reads them when the model is asked.
    session: SessionStatus | None = None
    # The reply row's routing and release fields for the release metrics, set by
    # ``services.turn_plan`` when it writes the row (None: read back from the row).
    reply_row: dict[str, Any] | None = None
    # The plan's text is a hedged quote of a help-article section, not an answer
    # (``knowledge.pointing``): the marker the reply carries when that text goes out.
    pointed: dict[str, Any] | None = None

    def cited(self) -> list[dict[str, Any]]:
        """The passages the answer is written from (the ``done`` frame's citations)."""
        return []

    def record(self) -> dict[str, Any]:
        """What the tier adds to the stored reply's metadata."""
        return {}

    def pointed_sent(self) -> None:
        """The pointed text goes out: a tier that cites the quoted section only then
        adds its citation here."""


def template_text(ctx: TurnContext, intent: str, key: str) -> str:
    if ctx.prompt_version:
        # A release's template version ("default-v2") wins where admins wrote one.
        versioned = template_get_exact(
            intent=intent, key=f"{key}-{ctx.prompt_version}", language=ctx.language
        )
        if versioned is not None:
            return versioned
    return template_get(intent=intent, key=key, language=ctx.language)


def say(
    ctx: TurnContext,
    intent: str,
    key: str,
    facts: dict[str, str] | None = None,
    *,
    tier: str = rt.L1,
    actions: list[str] | None = None,
    personal: bool = False,
    label: str = "",
) -> AnswerPlan:
    """A deterministic reply from template ``intent.key``; ``label`` is the intent
    recorded for the turn when it differs (shared "dialogue" texts). A template that
    ends in an offer carries it in the actions (``offers.offers_of``)."""
    text = template_render(template_text(ctx, intent, key), facts or {})
    actions = list(actions or [])
    actions += [offer for offer in offers_of(intent, key) if offer not in actions]
    return AnswerPlan(
        tier=tier,
        intent=label or intent,
        text=text,
        language=ctx.language,
        actions=actions,
        personal=personal,
    )


# -- answering ---------------------------------------------------------------------------
@dataclass
class Reply:
    """What has been sent so far and its verdicts, for storing whatever happens."""

    parts: list[str] = field(default_factory=list)
    first_chunk_ms: float | None = None
    model: str = ""
    usage: Usage = field(default_factory=Usage)
    guard: str = "n/a"
    fallback: dict[str, Any] | None = None
    replaced: bool = False
    # Resilience facts for the stored metadata (cache hit, leak, queue wait, budget).
    meta: dict[str, Any] = field(default_factory=dict)
    # The turn's: VIP and token budget (the model queue), first-chunk latency.
    conversation_id: int = 0
    received_at: float = 0.0

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def mark_first(self) -> None:
        if self.first_chunk_ms is None:
            self.first_chunk_ms = round((time.perf_counter() - self.received_at) * 1000, 1)


class Answerer(Protocol):
    tier: str

    def plan(self, ctx: TurnContext, decision: rt.RouteDecision) -> AnswerPlan: ...

    def stream(self, plan: AnswerPlan, reply: Reply) -> AsyncIterator[TurnEvent]: ...


class GuardedAnswerer:
    """``stream`` for every tier: the plan's text, or its model stream under the
    tier's guards (``reply_guards``) and the leak guard."""

    tier: str = ""

    def guards(self, plan: AnswerPlan) -> list[Guard]:
        return []

    async def stream(self, plan: AnswerPlan, reply: Reply) -> AsyncIterator[TurnEvent]:
        if plan.generation is None:
            plan_text_marked(plan, reply)
            async for event in text_answer(plan.text, reply):
                yield event
            return
        async for event in model_answer(plan, reply, self.guards(plan)):
            yield event


def plan_text_marked(plan: AnswerPlan, reply: Reply) -> None:
    """The plan's own text goes out: a pointed one carries its marker."""
    if plan.pointed:
        reply.meta["pointed"] = plan.pointed
        plan.pointed_sent()


_WORDS = re.compile(r"\S+\s*|\s+")
_CJK_RUN = re.compile(
    r"[\u4e00-\u9fff\u3000-\u303f\uff00-\uffef]{1,4}|[^\u4e00-\u9fff\u3000-\u303f\uff00-\uffef]+"
)


def text_chunks(text: str) -> list[str]:
    """Split a deterministic reply into word-sized chunks so it streams like a model's."""
    pieces: list[str] = []
    for word in _WORDS.findall(text):
        pieces.extend(_CJK_RUN.findall(word) if re.search(r"[\u4e00-\u9fff]", word) else [word])
    return pieces


async def text_answer(text: str, reply: Reply) -> AsyncIterator[TurnEvent]:
    for piece in text_chunks(text):
        reply.mark_first()
        reply.parts.append(piece)
        yield Chunk(piece)


async def replace_answer(
    text: str, reply: Reply, *, whole: bool = False
) -> AsyncIterator[TurnEvent]:
    """``text`` instead of whatever was shown: a ``replace`` frame if text was shown
    (docs/protocol.md, "replace"), else streamed (``whole``: as one chunk)."""
    reply.mark_first()
    if reply.parts:
        reply.parts = [text]
        reply.replaced = True
        yield Replace(text)
    elif whole:
        reply.parts = [text]
        yield Chunk(text)
    else:
        async for event in text_answer(text, reply):
            yield event


async def model_answer(
    plan: AnswerPlan, reply: Reply, guards: list[Guard]
) -> AsyncIterator[TurnEvent]:
    """Stream the plan's generation through the model pool (``inference.resilience``),
    every chunk through the leak guard and then the tier's guards. A guard that trips
    stops generation and its verdict's replacement is sent; at the end each guard's
    ``finish`` may add a tail or replace the reply."""
    from .reply_guards import LeakGuard

    assert plan.generation is not None
    backend = get_backend(plan.role)
    reply.model = backend.model_id
    # VIP (the model queue's priority) and the session's token budget (docs/resilience.md).
    session = plan.session or await in_db_thread(session_status)(
        conversation_id=reply.conversation_id
    )
    info = StreamInfo()
    chain: list[Guard] = [LeakGuard(plan.language), *guards]
    tripped: Guard | None = None
    error: InferenceError | None = None
    generated = 0  # chunks from the engine: one token each, for when usage never arrives
    stream = model_stream(
        role=plan.role,
        request=plan.generation,
        info=info,
        vip=session.vip,
        over_budget=session.budget.tripped,
        use_cache=plan.tier in settings.TIERDESK_RESPONSE_CACHE_TIERS,
        personal=plan.personal,
    )
    try:
        async with contextlib.aclosing(stream):
            async for chunk in stream:
                if chunk.extra.get(RESTART):
                    # The large tier broke mid-reply; the fallback's answer replaces it.
                    if reply.parts:
                        reply.parts = []
                        reply.replaced = True
                        yield Replace("")
                    continue
                if chunk.usage is not None:
                    reply.usage = chunk.usage
                generated += 1 if chunk.text else 0
                text, tripped = await _guarded_text(chain, chunk.text, chunk.extra)
                if tripped is not None:
                    break  # stop generating; the guard's replacement goes out below
                if text:
                    # The first chunk must carry visible text: a base model often starts
                    # with a space, which the widget would show as nothing.
                    if not reply.parts:
                        text = text.lstrip()
                        if not text:
                            continue
                    reply.mark_first()
                    reply.parts.append(text)
                    yield Chunk(text)
    except InferenceError as exc:
        error = exc
    _absorb(reply, info)
    # Stopped early (a guard tripped, the model failed): the engine sends no usage, so count.
    reply.usage.completion_tokens = reply.usage.completion_tokens or generated
    async for event in _answer_end(plan, reply, chain, tripped, error, info):
        yield event


async def _guarded_text(
    chain: list[Guard], text: str | None, extra: dict[str, Any]
) -> tuple[str | None, Guard | None]:
    """A model chunk through every guard: the text to send now (possibly empty), or
    the guard that tripped on it."""
    for guard in chain:
        text = guard.feed(text or "", extra)
        if text is None:
            return None, guard
    for guard in chain:
        # Text a guard held back and has now checked (a whole sentence).
        text = (text or "") + await guard.drain()
    return text, None


async def _answer_end(
    plan: AnswerPlan,
    reply: Reply,
    chain: list[Guard],
    tripped: Guard | None,
    error: InferenceError | None,
    info: StreamInfo,
) -> AsyncIterator[TurnEvent]:
    """After the model stream: a failed model's replacement, each guard's ``finish``
    (a tail, or a replacement), and the guards' verdicts on the reply."""
    if error is not None:
        logger.warning("model %s failed: %s", reply.model, error)
        earlier = {"after": info.fallback["reason"]} if info.fallback else {}
        reply.fallback = {"reason": error.code, **earlier}
        tripped = next((g for g in chain if g.model_failed(error)), None)
        if tripped is None:
            if not reply.parts:
                # No guard's replacement: say plainly we can't answer (plan.text).
                plan_text_marked(plan, reply)
                async for event in text_answer(plan.text, reply):
                    yield event
            return
    if tripped is None:
        for guard in chain:
            tail = await guard.finish(reply.text)
            if tail is None:
                tripped = guard
                break
            if tail:
                reply.mark_first()
                reply.parts.append(tail)
                yield Chunk(tail)
    for guard in chain:
        if guard.verdict.label:
            reply.guard = guard.verdict.label
        # What a guard dropped and why, also when the reply went out trimmed.
        reply.meta.update(guard.verdict.meta)
    if tripped is not None:
        verdict = tripped.verdict
        if verdict.replacement is not None:
            async for event in replace_answer(verdict.replacement, reply, whole=verdict.whole):
                yield event


def _absorb(reply: Reply, info: StreamInfo) -> None:
    """Who really answered, and why (a fallback, a cache hit, a queue wait)."""
    reply.model = info.model or reply.model
    if reply.fallback is None and info.fallback:
        reply.fallback = info.fallback
    if info.cached:
        reply.meta["cached"] = True
    if info.queue_ms:
        reply.meta["queue_ms"] = info.queue_ms
    if info.prompt_tokens_counted is not None:
        reply.meta["precount_tokens"] = info.prompt_tokens_counted
    if info.breaker:
        reply.meta["breaker"] = info.breaker
