"""One turn end to end, as an async stream of events for the consumer to relay.

stored message -> plan (router, dialogue, the tier's answerer; in a worker thread,
``services.turn_plan``) -> the tier's answerer streams it (template text, or a model
stream in the inference pool under its guards) -> reply stored with its metadata ->
``done``. The answerers are in ``chatbot.answerers``; this is the driver, the same for
every tier.

Admission control (``inference.admission``, docs/protocol.md "Degraded replies"): before a
tier's model is asked, the turn is admitted only if its first chunk is predicted within
the tier's budget, and an admitted turn without a first chunk by the budget is cut off.
Either way the turn degrades instead of waiting or failing (``degraded_text``): L1 sends
its template with the facts, L2 the extract of the best cited passage, L3 first tries the
fallback model's queue and otherwise says it is busy and offers a person. ``done.degraded``
says so and why.

If the task is cancelled (the shopper disconnected), the partial reply is stored and
marked incomplete; the write is shielded so the cancellation can't skip it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, cast

from django.conf import settings
from django.db import DatabaseError

from inference import cache
from inference.admission import DEADLINE, PREDICTED, Admission, Ticket, admission, server_slots
from inference.base import Usage
from inference.registry import resolve_role
from routing import types as rt

from . import services
from .answerers import answerer_for
from .answerers.base import (
    AnswerPlan,
    Chunk,
    Done,
    Failed,
    Replace,
    Reply,
    TurnEvent,
    plan_text_marked,
    replace_answer,
)
from .answerers.l2 import L2Plan
from .answerers.l3 import handoff_offer_remember
from .answerers.offers import OFFER_HUMAN
from .models import Message
from .threads import in_db_thread, in_plan_thread

__all__ = ["Chunk", "Done", "Failed", "Replace", "TurnEvent", "turn_stream"]


logger = logging.getLogger(__name__)


async def turn_stream(
    *, conversation_id: int, message_id: int, received_at: float
) -> AsyncIterator[TurnEvent]:
    plan, reply_id = await in_plan_thread(services.turn_plan)(
        conversation_id=conversation_id, message_id=message_id
    )
    reply = Reply(conversation_id=conversation_id, received_at=received_at)
    status = Message.Status.COMPLETE
    checkpoint = ReplyCheckpoint(reply_id)
    try:
        async for event in admitted_stream(plan, reply):
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
            # The options the reply's question offers: the widget's buttons.
            "choices": plan.choices,
            # The reply's language: the widget labels its buttons in it (docs/i18n.md).
            "language": plan.language,
            # Set when the reply explains a failure (e.g. the order system is down).
            "error": plan.error_code or None,
            # Set when the model couldn't start within the tier's budget: the reply is
            # the tier's text that needs no model (docs/protocol.md, "degraded").
            "degraded": reply.meta.get("degraded"),
            # Set when the reply is a hedged quote of a help-article section, not an
            # answer (docs/protocol.md, "pointed").
            "pointed": reply.meta.get("pointed"),
        }
    )


async def admitted_stream(plan: AnswerPlan, reply: Reply) -> AsyncIterator[TurnEvent]:
    """The tier's answer under admission control (module docstring)."""
    answerer = answerer_for(plan.tier)
    if plan.generation is None or plan.tier not in settings.TIERDESK_FIRST_CHUNK_BUDGET_MS:
        async for event in answerer.stream(plan, reply):
            yield event
        return
    reply.meta["model_planned"] = True
    if await _checked_answer_cached(plan):
        async for event in answerer.stream(plan, reply):  # a stored answer: no model
            yield event
        return
    gate = admission()
    ticket = _ticket_get(gate, plan, reply)
    if not ticket.admitted:
        gate.gave_up(ticket)
        async for event in _degrade(plan, reply, ticket.degraded(PREDICTED)):
            yield event
        return
    events = cast(AsyncGenerator[TurnEvent, None], answerer.stream(plan, reply))
    step: asyncio.Future[TurnEvent] | None = None
    try:
        while True:
            if reply.first_chunk_ms is None and ticket.deadline is not None:
                step = asyncio.ensure_future(anext(events))
                left = max(0.0, ticket.deadline - time.perf_counter())
                await asyncio.wait({step}, timeout=left)
                if not step.done():
                    # Cut off. The model's step is cancelled but its clean-up (closing
                    # the model connection, the slot, the breaker: several awaits, each
                    # a turn of a loop that is busy under load) is waited for only after
                    # the degraded text is out, so the text reaches the shopper within
                    # the budget (``wait_for`` would wait for the clean-up first).
                    step.cancel()
                    at = time.perf_counter()
                    gate.missed(ticket, at=at)
                    why = ticket.degraded(
                        DEADLINE, waited_ms=round((at - reply.received_at) * 1000)
                    )
                    async for degraded in _degrade(plan, reply, why):
                        yield degraded
                    return
                try:
                    event = step.result()
                except StopAsyncIteration:
                    break
            else:
                try:
                    event = await anext(events)
                except StopAsyncIteration:
                    break
            yield event
    finally:
        if step is not None and not step.done():
            step.cancel()
        if step is not None:
            # The cancelled step must end before the stream is closed (a running async
            # generator can't be closed), also when the turn itself is cancelled.
            await asyncio.gather(step, return_exceptions=True)
        await events.aclose()
    _service_time_record(ticket, reply)


def _ticket_get(gate: Admission, plan: AnswerPlan, reply: Reply) -> Ticket:
    """Admit the turn to its tier's model; L3's turn, when its model is busy, to the
    fallback model's queue if that can start in time."""
    ticket = gate.admit(
        tier=plan.tier,
        role=plan.role,
        received_at=reply.received_at,
        server=server_slots(plan.role),
    )
    fallback_role = settings.TIERDESK_L3_FALLBACK_ROLE
    if (
        not ticket.admitted
        and plan.tier == rt.L3
        and resolve_role(plan.role) != resolve_role(fallback_role)
    ):
        # L3's model is busy: the fallback model's queue, if it can start in time.
        second = gate.admit(
            tier=plan.tier,
            role=fallback_role,
            received_at=reply.received_at,
            count=False,
            server=server_slots(fallback_role),
        )
        if second.admitted:
            plan.role, ticket = fallback_role, second
            reply.fallback = {"reason": "busy"}
    if ticket.elapsed_ms is not None:
        # Stored with the reply: the part of the budget spent before any model was asked.
        reply.meta["admitted_ms"] = round(ticket.elapsed_ms, 1)
    return ticket


def _service_time_record(ticket: Ticket, reply: Reply) -> None:
    if reply.first_chunk_ms is None or reply.meta.get("cached") or reply.fallback is not None:
        return  # not the tier's model starting a reply
    at = reply.received_at + reply.first_chunk_ms / 1000
    admission().first_chunk(ticket, at=at, queue_s=float(reply.meta.get("queue_ms", 0)) / 1000)


async def _checked_answer_cached(plan: AnswerPlan) -> bool:
    """L2 stores checked answers (``answerers.l2``): a hit needs no model."""
    if not isinstance(plan, L2Plan) or not plan.answer_key:
        return False
    return bool(await cache.cache_get(plan.answer_key))


def degraded_text(plan: AnswerPlan) -> tuple[str, str]:
    """The tier's reply that needs no model, and its guard label: L1's template with the
    facts; L2's extract of the best cited passage (its section quoted when the extract
    states another case's branch; else the passage pointer the plan falls back on);
    L3's quote of the section a question is clearly about, or "I can't answer that
    right now, or ask for a person"."""
    if plan.tier == rt.L1:
        return plan.text, "template"
    if isinstance(plan, L2Plan) and plan.grounding and plan.grounding.get("extract"):
        pointed = plan.grounding.get("pointed") or {}
        if pointed.get("extract_other_case"):
            # The extract states a branch of a rule for another case than the one the
            # question names: its section, quoted (knowledge.pointing).
            return str(pointed["text"]), "pointed"
        return str(plan.grounding["extract"]), "extract"
    return plan.text, "pointed" if plan.pointed else "n/a"


async def _degrade(plan: AnswerPlan, reply: Reply, why: dict[str, Any]) -> AsyncIterator[TurnEvent]:
    text, label = degraded_text(plan)
    reply.meta["degraded"] = why
    if label == "pointed" and isinstance(plan, L2Plan) and plan.grounding:
        reply.meta["pointed"] = plan.grounding["pointed"]["marker"]
    elif label == "pointed":
        plan_text_marked(plan, reply)
    reply.model, reply.usage, reply.guard, reply.fallback = "", Usage(), label, None
    remember = plan.tier == rt.L3 and OFFER_HUMAN not in plan.actions
    if remember:
        plan.actions.append(OFFER_HUMAN)
    async for event in replace_answer(text, reply):
        yield event
    if remember and reply.conversation_id:
        # After the text: the offer is still remembered before the ``done`` frame (a
        # "yes" can't come sooner), and the busy text, sent at the cut-off, doesn't wait
        # behind a database-pool thread first (under load that pool has a queue).
        await in_db_thread(handoff_offer_remember)(reply.conversation_id)


class ReplyCheckpoint:
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
            await in_db_thread(services.reply_checkpoint)(reply_id=self.reply_id, text=text)
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
    if plan.choices:
        metadata["choices"] = plan.choices
    metadata.update(plan.record())
    await in_db_thread(services.reply_finish)(
        reply_id=reply_id,
        text=reply.text,
        status=status,
        model=reply.model,
        prompt_tokens=reply.usage.prompt_tokens,
        completion_tokens=reply.usage.completion_tokens,
        first_chunk_ms=reply.first_chunk_ms,
        total_ms=round((time.perf_counter() - received_at) * 1000, 1),
        metadata=metadata,
        reply_row=plan.reply_row,
    )
