"""One turn end to end, as an async stream of events for the consumer to relay.

stored message -> plan (router, order facts, dialogue; in a worker thread) ->
the tier's answerer (model stream in the inference pool, or template text) ->
fact guard -> reply stored with its metadata.

If the task is cancelled (the shopper disconnected), the partial reply is stored and
marked incomplete; the write is shielded so the cancellation can't skip it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import DatabaseError

from inference.base import InferenceError, Usage
from inference.guard import GuardVerdict, StreamGuard
from inference.leak import REFUSAL
from inference.registry import get_backend
from inference.resilience import LEAK, RESTART, StreamInfo, model_stream

from . import services
from .budgets import session_status
from .dialogue import ReplyPlan
from .models import Message

logger = logging.getLogger(__name__)


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


@dataclass
class _Reply:
    """What has been sent so far, for storing whatever happens."""

    parts: list[str] = field(default_factory=list)
    first_chunk_ms: float | None = None
    model: str = ""
    usage: Usage = field(default_factory=Usage)
    guard: str = "n/a"
    fallback: dict[str, Any] | None = None
    replaced: bool = False
    # Resilience facts for the stored metadata (cache hit, leak, queue wait, budget).
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return "".join(self.parts)


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


async def turn_stream(
    *, conversation_id: int, message_id: int, received_at: float
) -> AsyncIterator[TurnEvent]:
    plan, reply_id = await database_sync_to_async(services.turn_plan)(
        conversation_id=conversation_id, message_id=message_id
    )
    reply = _Reply()
    status = Message.Status.COMPLETE

    def mark_first() -> None:
        if reply.first_chunk_ms is None:
            reply.first_chunk_ms = round((time.perf_counter() - received_at) * 1000, 1)

    checkpoint = _Checkpoint(reply_id)
    try:
        if plan.generation is None:
            for piece in text_chunks(plan.text):
                mark_first()
                reply.parts.append(piece)
                yield Chunk(piece)
        else:
            async for event in _generate(plan, reply, mark_first, conversation_id):
                yield event
                await checkpoint.maybe(reply)
    except asyncio.CancelledError:
        status = Message.Status.INCOMPLETE
        await asyncio.shield(_store(reply_id, reply, status, plan, received_at))
        raise
    except Exception:
        logger.exception("turn failed for message %s", message_id)
        status = Message.Status.ERROR
        await asyncio.shield(_store(reply_id, reply, status, plan, received_at))
        yield Failed("internal_error", "Something went wrong on our side; your message is saved.")
        return
    await asyncio.shield(_store(reply_id, reply, status, plan, received_at))
    yield Done(
        {
            "type": "done",
            "message_id": reply_id,
            "reply_to": message_id,
            "tier": plan.tier,
            "intent": plan.intent,
            "model": reply.model,
            "first_chunk_ms": reply.first_chunk_ms,
            "tokens": {
                "prompt": reply.usage.prompt_tokens,
                "completion": reply.usage.completion_tokens,
            },
            "status": status,
            "fallback": reply.fallback,
            "guard": reply.guard,
            "citations": plan.citations,
            "actions": plan.actions,
            # Set when the reply explains a failure (e.g. the order system is down).
            "error": plan.error_code or None,
        }
    )


async def _generate(
    plan: ReplyPlan, reply: _Reply, mark_first: Any, conversation_id: int = 0
) -> AsyncIterator[TurnEvent]:
    assert plan.generation is not None
    backend = get_backend(plan.role)
    reply.model = backend.model_id
    # VIP (the model queue's priority) and the session's token budget (docs/resilience.md).
    session = await database_sync_to_async(session_status)(conversation_id=conversation_id)
    info = StreamInfo()
    guard = (
        StreamGuard(facts=plan.guard_facts, required=plan.guard_required, template_text=plan.text)
        if plan.guard_facts is not None
        else None
    )
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
                if chunk.extra.get(LEAK):
                    reply.meta["leak_blocked"] = chunk.extra[LEAK]
                    refusal = REFUSAL.get(plan.language, REFUSAL["en"])
                    mark_first()
                    if reply.parts:
                        reply.replaced = True
                        yield Replace(refusal)
                    else:
                        yield Chunk(refusal)
                    reply.parts = [refusal]
                    break
                if chunk.usage is not None:
                    reply.usage = chunk.usage
                generated += 1 if chunk.text else 0
                text = chunk.text
                if guard is not None:
                    released = guard.feed(text)
                    if released is None:
                        break  # the guard tripped: stop generating, send the template
                    text = released
                if text:
                    # The first chunk must carry visible text: a base model often starts
                    # with a space, which the widget would show as nothing.
                    if not reply.parts:
                        text = text.lstrip()
                        if not text:
                            continue
                    mark_first()
                    reply.parts.append(text)
                    yield Chunk(text)
        if guard is not None:
            tail = guard.finish()
            if tail:
                mark_first()
                reply.parts.append(tail)
                yield Chunk(tail)
    except InferenceError as exc:
        _absorb(reply, info)
        reply.usage.completion_tokens = reply.usage.completion_tokens or generated
        logger.warning("model %s failed: %s", reply.model, exc)
        earlier = {"after": info.fallback["reason"]} if info.fallback else {}
        reply.fallback = {"reason": exc.code, **earlier}
        if guard is None:
            if not reply.parts:
                # An open question has no facts template: say plainly we can't answer.
                async for event in _send_template(plan, reply, mark_first):
                    yield event
            return
        guard.verdict = GuardVerdict(False, f"model error: {exc.code}")
    _absorb(reply, info)
    # Stopped early (the guard tripped): the engine sends no usage, so count.
    reply.usage.completion_tokens = reply.usage.completion_tokens or generated
    if guard is not None:
        if guard.verdict.ok:
            reply.guard = "passed"
        else:
            reply.guard = "template"
            logger.info("fact guard: %s; sending the template", guard.verdict.reason)
            async for event in _send_template(plan, reply, mark_first):
                yield event
    elif plan.grounding is not None and reply.parts and not reply.meta.get("leak_blocked"):
        async for event in _ground(plan.grounding, reply):
            yield event


async def _ground(grounding: dict[str, Any], reply: _Reply) -> AsyncIterator[TurnEvent]:
    """L2: check the finished answer against its cited passages (knowledge.grounding).

    It runs when the answer is complete because a claim is a sentence: the widget shows
    the streamed text, and a replace frame swaps in the checked version if it differs."""
    from knowledge.grounding import answer_guard

    answer = "".join(reply.parts)
    # jieba and the stemmer are CPU work: off the event loop.
    checked = await asyncio.to_thread(
        answer_guard,
        answer,
        grounding["passages"],
        question=grounding["question"],
        extract=grounding["extract"],
    )
    reply.guard = checked.verdict
    if checked.verdict == "passed":
        return
    logger.info("grounding guard: %s; unsupported: %s", checked.verdict, checked.unsupported)
    reply.meta["unsupported_claims"] = checked.unsupported[:5]
    reply.parts = [checked.text]
    reply.replaced = True
    yield Replace(checked.text)


def _absorb(reply: _Reply, info: StreamInfo) -> None:
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


async def _send_template(
    plan: ReplyPlan, reply: _Reply, mark_first: Any
) -> AsyncIterator[TurnEvent]:
    if reply.parts:
        # Text already shown: replace it whole (docs/protocol.md, "replace").
        reply.parts = [plan.text]
        reply.replaced = True
        mark_first()
        yield Replace(plan.text)
        return
    for piece in text_chunks(plan.text):
        mark_first()
        reply.parts.append(piece)
        yield Chunk(piece)


class _Checkpoint:
    """Writes the partial reply now and then while a model streams it.

    A cancelled turn stores its partial reply itself, but a process killed with
    SIGKILL can't: without these writes the shopper's message survives and the reply
    comes back empty. At most one short UPDATE a second per streaming reply; a failed
    write (database restarting) is logged and the stream goes on."""

    def __init__(self, reply_id: int) -> None:
        self.reply_id = reply_id
        self.every_s = settings.TIERDESK_REPLY_CHECKPOINT_MS / 1000
        self.last = float("-inf")  # the first chunk is written at once
        self.stored = ""

    async def maybe(self, reply: _Reply) -> None:
        # Called for every chunk: the clock is checked before the text is joined.
        now = time.monotonic()
        if self.every_s <= 0 or now - self.last < self.every_s:
            return
        text = reply.text
        if text == self.stored:
            return
        self.last = now
        try:
            await database_sync_to_async(services.reply_checkpoint)(
                reply_id=self.reply_id, text=text
            )
            self.stored = text
        except DatabaseError as exc:
            logger.warning("reply %s: checkpoint not written (%s)", self.reply_id, exc)


async def _store(
    reply_id: int, reply: _Reply, status: str, plan: ReplyPlan, received_at: float
) -> None:
    metadata: dict[str, Any] = {"guard": reply.guard, "route_ms": round(plan.route_ms, 3)}
    if reply.fallback:
        metadata["fallback"] = reply.fallback
    if reply.replaced:
        metadata["replaced"] = True
    metadata.update(reply.meta)
    if plan.error_code:
        metadata["error_code"] = plan.error_code
    if plan.actions:
        metadata["actions"] = plan.actions
    if plan.citations:
        metadata["citations"] = plan.citations
    if plan.retrieval:
        metadata["retrieval"] = plan.retrieval
    await database_sync_to_async(services.reply_finish)(
        reply_id=reply_id,
        text=reply.text,
        status=status,
        model=reply.model,
        prompt_tokens=reply.usage.prompt_tokens,
        completion_tokens=reply.usage.completion_tokens,
        first_chunk_ms=reply.first_chunk_ms,
        total_ms=round((time.perf_counter() - received_at) * 1000, 1),
        metadata=metadata,
    )
