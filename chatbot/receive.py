"""The chat connection's services: what each client frame does, as typed async
services the consumer calls (docs/protocol.md).

Each returns the frame(s) to send or raises a ``Refusal`` (chatbot/refusals.py), which
the consumer renders with ``refusal_frame``. Blocking work runs in a thread of
the database pool (``chatbot.threads``), never on the event loop and never on Channels'
one thread-sensitive thread.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone

from . import selectors, services
from .botcheck import BotSession
from .botcheck.store import message_store_checked, verdict_record
from .feedback import feedback_rate
from .handoff import HANDOFF_HELD, handoff_relay, handoff_status
from .limits import message_admit
from .orders.identity import shopper_token_verify
from .protocol import IdentifyFrame, MessageFrame, PingFrame, RateFrame
from .refusals import (
    BOT_REFUSALS,
    IdentityConflict,
    InternalError,
    RateLimited,
    Refusal,
    StoreUnavailable,
    TooManyQueued,
    TurnFailed,
    refusal_frame,
)
from .threads import in_db_thread
from .turn import Chunk, Done, Failed, Replace, turn_stream

logger = logging.getLogger(__name__)

# Pending messages per connection beyond which new ones are refused (a flood).
MAX_QUEUED_TURNS = 20


class TurnQueue:
    """One connection's turns: answered one at a time, in order."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[tuple[int, float]] = asyncio.Queue()
        self._seen: set[int] = set()  # message ids queued or answered on this connection

    @property
    def pending(self) -> int:
        return self._queue.qsize()

    def holds(self, message_id: int) -> bool:
        return message_id in self._seen

    def put(self, *, message_id: int, received_at: float) -> None:
        self._seen.add(message_id)
        self._queue.put_nowait((message_id, received_at))

    async def get(self) -> tuple[int, float]:
        return await self._queue.get()


# -- connect ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Connection:
    conversation_id: int
    rate_key: str  # the conversation's public id: unique across databases (rate limits)
    session_key: str
    identified: bool


async def conversation_connect(
    *, session_key: str | None, client_ip: str | None, user_agent: str
) -> Connection:
    conversation, _created = await in_db_thread(services.conversation_open)(
        session_key=session_key, client_ip=client_ip, user_agent=user_agent
    )
    return Connection(
        conversation_id=conversation.pk,
        rate_key=str(conversation.public_id),
        session_key=conversation.session_key,
        identified=bool(conversation.customer_id),
    )


async def hello_frame(*, connection: Connection, bot: BotSession) -> dict[str, Any]:
    history = await in_db_thread(selectors.conversation_history)(
        conversation_id=connection.conversation_id, limit=settings.TIERDESK_HISTORY_ON_CONNECT
    )
    score = await in_db_thread(selectors.conversation_score)(
        conversation_id=connection.conversation_id
    )
    handoff = await in_db_thread(handoff_status)(conversation_id=connection.conversation_id)
    # A conversation's language is known once the shopper has written; before that the
    # widget keeps the page's (a new conversation's stored default says nothing).
    language = (
        await in_db_thread(selectors.conversation_language)(
            conversation_id=connection.conversation_id
        )
        if history
        else None
    )
    return {
        "type": "hello",
        "session": connection.session_key,
        "conversation": connection.rate_key,
        "history": history,
        "identified": connection.identified,
        "rating": score,
        # Human handoff: queued (place, wait) or claimed (the person's name); else None.
        "handoff": handoff,
        "language": language,
        "limits": {
            "max_message_chars": settings.TIERDESK_MAX_MESSAGE_CHARS,
            "max_frame_bytes": settings.TIERDESK_MAX_FRAME_BYTES,
            "max_attachment_bytes": settings.TIERDESK_ATTACHMENT_MAX_BYTES,
        },
        "pacing_ms": settings.TIERDESK_STREAM_PACING_MS,
        "server_time": timezone.now().isoformat(),
        "botcheck": bot.hello(),
    }


# -- refusals ---------------------------------------------------------------------------------


async def refusal_frame_for(*, conversation_id: int, refusal: Refusal) -> dict[str, Any]:
    """A refusal's ``error`` frame in the conversation's language (docs/i18n.md)."""
    try:
        language = await in_db_thread(selectors.conversation_language)(
            conversation_id=conversation_id
        )
    except DatabaseError:
        # The database is what failed (StoreUnavailable): the message still goes out.
        language = "en"
    return refusal_frame(refusal, language)


# -- message ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Receipt:
    """A stored message: its ack, whether it is answered, and the refusal (if any)
    sent right after the ack."""

    client_id: str
    message_id: int
    duplicate: bool
    # What the ack promises: the message is new, or an unanswered resend.
    answering: bool
    # A rate limit or the queue bound: the message is stored and acked, not answered.
    refused: Refusal | None = None
    # The conversation waits for or is held by a person (human handoff): the bot stays
    # silent; ``held`` says which ("queued", "claimed").
    human: bool = False
    held: str = ""

    @property
    def answer(self) -> bool:
        """Queue the turn."""
        return self.answering and self.refused is None

    @property
    def ack(self) -> dict[str, Any]:
        ack = {
            "type": "ack",
            "id": self.client_id,
            "message_id": self.message_id,
            "duplicate": self.duplicate,
            "answering": self.answering,
        }
        if self.human:
            ack["human"] = True
            ack["held"] = self.held
        return ack


async def message_receive(
    *,
    conversation_id: int,
    frame: MessageFrame,
    bot: BotSession,
    turns: TurnQueue,
    rate_key: str,
    client_ip: str | None,
) -> Receipt:
    """Bot check, store, rate limits and the queue bound for one message frame.

    Raises a ``BotRefusal`` (not stored; its verdict is recorded) or ``StoreUnavailable``
    (not stored; the client resends). Otherwise the message is stored and the receipt
    says what to ack and whether to answer; a rate limit or a full queue is returned as
    ``receipt.refused``, because the stored message is acked first (docs/protocol.md).
    """
    # The bot check runs before the message is stored or any model runs (pure, no I/O).
    verdict = bot.check(frame.bot, text=frame.text)
    if not verdict.allowed:
        await in_db_thread(verdict_record)(
            conversation_id=conversation_id, client_id=frame.client_id, verdict=verdict
        )
        raise BOT_REFUSALS[verdict.action](reply_to=frame.client_id)
    try:
        stored = await in_db_thread(message_store_checked)(
            conversation_id=conversation_id,
            client_id=frame.client_id,
            text=frame.text,
            verdict=verdict if bot.enabled else None,
        )
    except DatabaseError:
        # The connection stays open instead of dying with a 1011.
        logger.warning("could not store message %s", frame.client_id, exc_info=True)
        raise StoreUnavailable(reply_to=frame.client_id) from None
    message_id = stored.message.pk
    # A resend of a stored message is answered only if nothing answered it yet and
    # this connection hasn't queued it already (the widget resends what it hasn't
    # seen acked; the ack may have been lost with a killed process).
    answering = stored.created or (stored.unanswered and not turns.holds(message_id))
    if answering:
        # Queued or claimed for a person: the message goes to the conversation the desk
        # sees, and the person answers it, not the bot (which would only offer the
        # person the shopper is already waiting for). The ack says it was passed on.
        held = await handoff_relay(
            conversation_id=conversation_id, message=stored.message, relay=stored.created
        )
        if held in HANDOFF_HELD:
            return Receipt(
                client_id=frame.client_id,
                message_id=message_id,
                duplicate=not stored.created,
                answering=False,
                human=True,
                held=held,
            )
    receipt = Receipt(
        client_id=frame.client_id,
        message_id=message_id,
        duplicate=not stored.created,
        answering=answering,
    )
    if not answering:
        return receipt
    # Rate limits (docs/resilience.md): the message is stored; it is not answered.
    admitted = await message_admit(session=rate_key, ip=client_ip)
    if not admitted.allowed:
        refused: Refusal = RateLimited(
            reply_to=frame.client_id,
            message_id=message_id,
            retry_after=admitted.retry_after_s,
            limit=admitted.limit,
        )
        return dataclasses.replace(receipt, refused=refused)
    if turns.pending >= MAX_QUEUED_TURNS:
        return dataclasses.replace(receipt, refused=TooManyQueued(reply_to=frame.client_id))
    return receipt


async def turn_frames(
    *, conversation_id: int, message_id: int, received_at: float
) -> AsyncIterator[dict[str, Any]]:
    """The frames of one turn's reply: chunks, replaces, then ``done`` or an error."""
    try:
        async for event in turn_stream(
            conversation_id=conversation_id, message_id=message_id, received_at=received_at
        ):
            if isinstance(event, Chunk):
                yield {"type": "chunk", "text": event.text}
            elif isinstance(event, Replace):
                yield {"type": "replace", "text": event.text}
            elif isinstance(event, Done):
                yield event.frame
            elif isinstance(event, Failed):
                yield await refusal_frame_for(
                    conversation_id=conversation_id,
                    refusal=TurnFailed(
                        code=event.code, message=event.message, message_id=message_id
                    ),
                )
    except asyncio.CancelledError:
        raise
    except Exception:
        # turn_stream stores its own failures; this is the last line of defence so one
        # bad turn never kills the connection.
        logger.exception("turn crashed for message %s", message_id)
        yield await refusal_frame_for(
            conversation_id=conversation_id, refusal=InternalError(message_id=message_id)
        )


# -- identify, rate, ping ----------------------------------------------------------------------


async def conversation_identify_token(
    *, conversation_id: int, frame: IdentifyFrame
) -> dict[str, Any]:
    """Bind the conversation to the shopper of a shop-signed token. Raises
    ``ShopperTokenError`` (``bad_token``) or ``IdentityConflict``."""
    claims = shopper_token_verify(token=frame.token)  # an HMAC: no I/O
    bound = await in_db_thread(services.conversation_identify)(
        conversation_id=conversation_id,
        customer_id=claims.customer_id,
        vip=claims.vip,
        method="token",
    )
    if not bound:
        raise IdentityConflict()
    return {"type": "identified", "ok": True}


async def conversation_rate(*, conversation_id: int, frame: RateFrame) -> dict[str, Any]:
    """Store a rating. Raises ``FeedbackError`` (``unknown_message``)."""
    rated = await in_db_thread(feedback_rate)(
        conversation_id=conversation_id, message_id=frame.message_id, value=frame.value
    )
    return {
        "type": "rated",
        "message_id": rated.message_id,
        "value": rated.value,
        "changed": rated.changed,
    }


def ping_answer(*, frame: PingFrame) -> dict[str, Any]:
    return {"type": "pong", "ts": frame.ts}
