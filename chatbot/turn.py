"""One turn end to end, as an async stream of events for the consumer to relay.

stored message -> plan (router, dialogue, the tier's answerer; in a worker thread,
``services.turn_plan``) -> the tier's answerer streams it (template text, or a model
stream in the inference pool under its guards) -> reply stored with its metadata ->
``done``. The answerers are in ``chatbot.answerers``; this is the driver, the same for
every tier.

If the task is cancelled (the shopper disconnected), the partial reply is stored and
marked incomplete; the write is shielded so the cancellation can't skip it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import DatabaseError

from . import services
from .answerers import answerer_for
from .answerers.base import AnswerPlan, Chunk, Done, Failed, Replace, Reply, TurnEvent
from .models import Message

__all__ = ["Chunk", "Done", "Failed", "Replace", "TurnEvent", "turn_stream"]

logger = logging.getLogger(__name__)


async def turn_stream(
    *, conversation_id: int, message_id: int, received_at: float
) -> AsyncIterator[TurnEvent]:
    plan, reply_id = await database_sync_to_async(services.turn_plan)(
        conversation_id=conversation_id, message_id=message_id
    )
    reply = Reply(conversation_id=conversation_id, received_at=received_at)
    status = Message.Status.COMPLETE
    checkpoint = _Checkpoint(reply_id)
    try:
        async for event in answerer_for(plan.tier).stream(plan, reply):
            yield event
            if plan.generation is not None:
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
            "citations": plan.cited(),
            "actions": plan.actions,
            # Set when the reply explains a failure (e.g. the order system is down).
            "error": plan.error_code or None,
        }
    )


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

    async def maybe(self, reply: Reply) -> None:
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
    reply_id: int, reply: Reply, status: str, plan: AnswerPlan, received_at: float
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
    metadata.update(plan.record())
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
