"""Writes for the chat service: conversations, messages, and planning one turn."""

from __future__ import annotations

import dataclasses
import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from knowledge.text import has_cjk, language_detect
from releases.assignment import Assignment, release_assign
from releases.config import ReleaseConfig
from releases.metrics import ReplyFacts, reply_record
from releases.models import STABLE
from routing.templates import template_render

from .answerers.base import AnswerPlan, template_text
from .budgets import session_status
from .dialogue import Dialogue, TurnContext
from .handoff import (
    desk_group,
    disliked_question,
    group_frame_sync,
    handoff_queue,
    handoff_status,
    shopper_group,
)
from .handoff_dialogue import DISLIKED_KEY, HANDOFF_INTENT, STATUS_KEY
from .models import Conversation, Message
from .selectors import conversation_recent_turns

logger = logging.getLogger(__name__)


def conversation_open(
    *, session_key: str | None, client_ip: str | None = None, user_agent: str = ""
) -> tuple[Conversation, bool]:
    """Resume the conversation of ``session_key``, or start a new one."""
    if session_key:
        conversation = Conversation.objects.filter(session_key=session_key[:64]).first()
        if conversation is not None:
            # A reply still marked streaming belonged to a connection (or a process)
            # that is gone: it was cut off.
            Message.objects.filter(
                conversation=conversation, status=Message.Status.STREAMING
            ).update(status=Message.Status.INCOMPLETE, updated_at=timezone.now())
            return conversation, False
    conversation = Conversation.objects.create(
        client_ip=client_ip or None, user_agent=user_agent[:300]
    )
    return conversation, True


def conversation_identify(
    *, conversation_id: int, customer_id: str, vip: bool, method: str
) -> bool:
    """Bind the conversation to a shopper. A conversation already bound to another
    shopper is never moved: its history holds that shopper's order data."""
    updated = (
        Conversation.objects.filter(pk=conversation_id)
        .filter(Q(customer_id="") | Q(customer_id=customer_id))
        .update(customer_id=customer_id, vip=vip, identity=method, updated_at=timezone.now())
    )
    return updated == 1


def conversation_sweep_interrupted(*, older_than_s: float | None = None) -> int:
    """Mark replies left streaming by a dead process as incomplete (run at start-up).

    Only replies older than the turn timeout: another live process may be streaming
    the younger ones."""
    age = settings.TIERDESK_TURN_TIMEOUT_S if older_than_s is None else older_than_s
    cutoff = timezone.now() - timedelta(seconds=age)
    try:
        return Message.objects.filter(
            status=Message.Status.STREAMING, updated_at__lt=cutoff
        ).update(status=Message.Status.INCOMPLETE)
    except Exception:  # no table yet (before migrate): nothing to sweep
        logger.warning("could not sweep interrupted replies", exc_info=True)
        return 0


# Latin words from which a message without Chinese counts as English (message_store).
LANGUAGE_DECISIVE_WORDS = 3


def message_store(*, conversation_id: int, client_id: str, text: str) -> tuple[Message, bool]:
    """Store a shopper message before anything else happens; a resend is not stored twice."""
    try:
        with transaction.atomic():
            message = Message.objects.create(
                conversation_id=conversation_id,
                role=Message.Role.USER,
                client_id=client_id,
                text=text,
                status=Message.Status.RECEIVED,
                language=language_detect(text),
            )
            changes: dict[str, Any] = {"updated_at": timezone.now()}
            # The conversation's language follows what the shopper writes (the admin,
            # the server's own messages: docs/i18n.md), from every stored message, a
            # person's turn included; "ok" or an order number decides nothing.
            if has_cjk(text) or len(text.split()) >= LANGUAGE_DECISIVE_WORDS:
                changes["language"] = message.language
            Conversation.objects.filter(pk=conversation_id).update(**changes)
        return message, True
    except IntegrityError:
        existing = Message.objects.get(conversation_id=conversation_id, client_id=client_id)
        return existing, False


def turn_plan(*, conversation_id: int, message_id: int) -> tuple[AnswerPlan, int]:
    """Decide the reply for a stored message and create its (streaming) reply row."""
    # One query for both rows (the message's conversation is the turn's).
    message = Message.objects.select_related("conversation").get(
        pk=message_id, conversation_id=conversation_id
    )
    conversation = message.conversation
    # Gray release: the session's sticky variant decides the configuration of this turn.
    assignment = release_assign(session=str(conversation.public_id))
    ctx = _turn_context(message, conversation, assignment.config)
    ctx.state[STATUS_KEY] = conversation.handoff
    ctx.state[DISLIKED_KEY] = disliked_question(
        conversation_id=conversation_id, before_id=message_id
    )
    plan = Dialogue(ctx).plan()
    ctx.state.pop(STATUS_KEY, None)
    ctx.state.pop(DISLIKED_KEY, None)
    release_apply(plan, assignment.config)
    handoff_frame = _handoff_apply(conversation_id, ctx, plan)
    if handoff_frame is not None:
        # The widget writes its queue line and ticket form in the conversation's
        # language, which may not be the page's (a Chinese shopper on an English shop).
        handoff_frame["language"] = ctx.language
    reply = _turn_rows_write(message, conversation, ctx, plan, assignment)
    if handoff_frame is not None:
        # The shopper's widget shows the queue (or the ticket form); open desks re-read it.
        group_frame_sync(shopper_group(conversation_id), handoff_frame)
        group_frame_sync(desk_group(), {"type": "queue_changed"})
    if plan.generation is not None:
        # Read here, in the planning thread, rather than in a thread hop of its own
        # between the plan and the model call, which would delay the first chunk.
        plan.session = session_status(conversation_id=conversation_id, vip=conversation.vip)
    # What the release metrics need of the reply row, so that storing the reply doesn't
    # read it back (reply_metrics_record).
    plan.reply_row = {
        "tier": reply.tier,
        "variant": reply.variant,
        "release_id": reply.release_id,
        "reply_to__text": message.text,
        "intent": reply.intent,
        "route_reason": reply.route_reason,
    }
    return plan, reply.pk


def _turn_context(
    message: Message, conversation: Conversation, config: ReleaseConfig
) -> TurnContext:
    """What the dialogue knows of the turn: the message, the conversation's state and
    shopper, the last turns, and the release's settings for this session."""
    return TurnContext(
        text=message.text,
        language=message.language or language_detect(message.text),
        state=dict(conversation.state or {}),
        customer_id=conversation.customer_id,
        identity=conversation.identity,
        history=conversation_recent_turns(
            conversation_id=conversation.pk, before_id=message.pk, turns=3
        ),
        clarify_threshold=config.clarify_threshold,
        prompt_version=config.prompt_version,
    )


def _turn_rows_write(
    message: Message,
    conversation: Conversation,
    ctx: TurnContext,
    plan: AnswerPlan,
    assignment: Assignment,
) -> Message:
    """Save the conversation's new state (and the shopper it is now bound to), label the
    message with the route, and create the reply row, streaming, in one transaction."""
    conversation.state = ctx.state
    # The language is the stored messages' (message_store), not this turn's guess.
    fields = ["state", "updated_at"]
    if ctx.verified is not None:
        conversation.customer_id = ctx.verified.customer_id
        conversation.vip = conversation.vip or ctx.verified.vip
        conversation.identity = ctx.verified_method or Conversation.Identity.EMAIL
        fields += ["customer_id", "vip", "identity"]
    with transaction.atomic():
        conversation.save(update_fields=fields)
        Message.objects.filter(pk=message.pk).update(
            tier=plan.tier,
            intent=plan.intent,
            confidence=plan.confidence,
            route_reason=plan.route_reason,
            language=plan.language,
        )
        return Message.objects.create(
            conversation_id=conversation.pk,
            role=Message.Role.BOT,
            reply_to_id=message.pk,
            status=Message.Status.STREAMING,
            language=plan.language,
            tier=plan.tier,
            intent=plan.intent,
            confidence=plan.confidence,
            route_reason=plan.route_reason,
            variant=assignment.variant,
            release_id=assignment.release_id,
        )


def _handoff_apply(conversation_id: int, ctx: TurnContext, plan: AnswerPlan) -> dict | None:
    """Perform the plan's handoff action: queue the conversation (the reply then says
    its place and the wait), or say nobody can answer. Returns the widget's frame."""
    if "handoff:queue" in plan.actions:
        info = handoff_queue(conversation_id=conversation_id)
        if info is None:  # a person holds it already
            return handoff_status(conversation_id=conversation_id)
        if not plan.text:
            plan.text = template_render(
                template_text(ctx, HANDOFF_INTENT, "queued"),
                {"position": str(info.position), "wait": str(max(1, round(info.wait_s / 60)))},
            )
        return info.frame()
    if "handoff:unavailable" in plan.actions:
        reason = "closed" if "handoff:closed" in plan.actions else "nobody_online"
        frame: dict[str, Any] = {"type": "handoff", "status": "unavailable", "reason": reason}
        email = _signed_in_email(ctx)
        if email:
            # The widget fills the ticket form's email with it: a signed-in shopper
            # shouldn't have to type what the shop already knows.
            frame["email"] = email
        return frame
    return None


def _signed_in_email(ctx: TurnContext) -> str:
    """The email of a shopper the shop signed in (a shop-signed token). Not for one
    verified in the chat by name and zip: that would show the email to anyone who
    knows someone's name and zip code."""
    if ctx.identity != Conversation.Identity.TOKEN or not ctx.customer_id:
        return ""
    # Through the shop's order service (the backend in settings), like every order fact.
    customer = ctx.orders().customer_by_id(customer_id=ctx.customer_id)
    return customer.email if customer else ""


def release_apply(plan: AnswerPlan, config: ReleaseConfig) -> None:
    """Point the plan at the release's model role for its tier and, for the fast
    model, at the release's sampling parameters."""
    if plan.generation is None:
        return
    was_fast = plan.role == "fast"
    plan.role = config.role_for(plan.tier, plan.role)
    if was_fast and (config.fast_temperature is not None or config.fast_max_tokens is not None):
        plan.generation = dataclasses.replace(
            plan.generation,
            temperature=plan.generation.temperature
            if config.fast_temperature is None
            else config.fast_temperature,
            max_tokens=plan.generation.max_tokens
            if config.fast_max_tokens is None
            else config.fast_max_tokens,
        )


def reply_checkpoint(*, reply_id: int, text: str) -> None:
    """The text streamed so far, while the reply is still being written."""
    Message.objects.filter(pk=reply_id, status=Message.Status.STREAMING).update(text=text)


def reply_finish(
    *,
    reply_id: int,
    text: str,
    status: str,
    model: str = "",
    prompt_tokens: int = 0,
    completion_tokens: int = 0,
    first_chunk_ms: float | None = None,
    total_ms: float | None = None,
    metadata: dict[str, Any] | None = None,
    reply_row: dict[str, Any] | None = None,
) -> None:
    # The same facts go to the reply row and to the release's per-minute metrics.
    facts: dict[str, Any] = {
        "text": text,
        "status": status,
        "model": model,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "first_chunk_ms": first_chunk_ms,
        "metadata": metadata or {},
    }
    Message.objects.filter(pk=reply_id).update(
        **facts, total_ms=total_ms, updated_at=timezone.now()
    )
    # Per-minute release metrics. Never at the reply's expense: the reply is stored.
    try:
        reply_metrics_record(reply_id=reply_id, reply_row=reply_row, **facts)
    except Exception:
        logger.exception("could not record the metrics of reply %s", reply_id)


def reply_metrics_record(
    *,
    reply_id: int,
    text: str,
    status: str,
    model: str,
    prompt_tokens: int,
    completion_tokens: int,
    first_chunk_ms: float | None,
    metadata: dict[str, Any],
    reply_row: dict[str, Any] | None = None,
) -> None:
    """``reply_row``: the reply row's routing and release fields, as ``turn_plan`` wrote
    them (read from the row when not given)."""
    row = reply_row or (
        Message.objects.filter(pk=reply_id)
        .values("tier", "variant", "release_id", "reply_to__text", "intent", "route_reason")
        .first()
    )
    if row is None:
        return
    reply_record(
        ReplyFacts(
            release_id=row["release_id"],
            variant=row["variant"] or STABLE,
            tier=row["tier"],
            status=status,
            model=model,
            first_chunk_ms=first_chunk_ms,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            question=row["reply_to__text"] or "",
            text=text,
            metadata=metadata,
            intent=row["intent"] or "",
            route_reason=row["route_reason"] or {},
        )
    )
