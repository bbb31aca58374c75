"""The chat WebSocket consumer: parse, store, relay. All logic lives in services.

Each turn runs as its own task so the consumer keeps reading frames (pings, more
messages, the disconnect) while a reply streams; turns of one connection run one at
a time, in order. A disconnect cancels the running turn, which stores the partial
reply as incomplete.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone

from . import selectors, services
from .botcheck import BotSession, Verdict
from .botcheck.store import message_store_checked, verdict_record
from .feedback import FeedbackError, feedback_rate
from .limits import message_admit
from .orders.identity import ShopperTokenError, shopper_token_verify
from .protocol import (
    IdentifyFrame,
    MessageFrame,
    PingFrame,
    ProtocolError,
    RateFrame,
    frame_parse,
)
from .turn import Chunk, Done, Failed, Replace, turn_stream

logger = logging.getLogger(__name__)

# Pending messages per connection beyond which new ones are refused (a flood).
MAX_QUEUED_TURNS = 20

# Bot-check outcomes other than "allow": (error code, text shown to the shopper).
BOT_REFUSALS = {
    "challenge": (
        "bot_challenge",
        "Please confirm you're here: press the button below to send your message.",
    ),
    "refuse": (
        "bot_refused",
        "This message looks automated, so it wasn't answered. If you're a person, "
        "please reload the page and try again.",
    ),
    "refuse_connection": (
        "bot_check_required",
        "This chat only works from the shop's chat widget.",
    ),
}


class ChatConsumer(AsyncWebsocketConsumer):
    conversation_id: int
    rate_key: str
    bot: BotSession
    queue: asyncio.Queue[tuple[int, float]]
    queued: set[int]  # message ids this connection has queued or answered
    worker: asyncio.Task[None] | None = None

    async def connect(self) -> None:
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        session_key = (query.get("session") or [""])[0] or None
        client = self.scope.get("client") or [None]
        headers = dict(self.scope.get("headers") or [])
        conversation, _created = await database_sync_to_async(services.conversation_open)(
            session_key=session_key,
            client_ip=client[0],
            user_agent=headers.get(b"user-agent", b"").decode("latin-1"),
        )
        self.conversation_id = conversation.pk
        self.rate_key = str(conversation.public_id)  # unique across databases (rate limits)
        self.queue = asyncio.Queue()
        self.queued = set()
        self.bot = BotSession.open()
        await self.accept()
        history = await database_sync_to_async(selectors.conversation_history)(
            conversation_id=conversation.pk, limit=settings.TIERDESK_HISTORY_ON_CONNECT
        )
        score = await database_sync_to_async(selectors.conversation_score)(
            conversation_id=conversation.pk
        )
        await self.send_json(
            {
                "type": "hello",
                "session": conversation.session_key,
                "conversation": str(conversation.public_id),
                "history": history,
                "identified": bool(conversation.customer_id),
                "rating": score,
                "limits": {
                    "max_message_chars": settings.TIERDESK_MAX_MESSAGE_CHARS,
                    "max_frame_bytes": settings.TIERDESK_MAX_FRAME_BYTES,
                },
                "pacing_ms": settings.TIERDESK_STREAM_PACING_MS,
                "server_time": timezone.now().isoformat(),
                "botcheck": self.bot.hello(),
            }
        )
        self.worker = asyncio.create_task(self._run_turns())

    async def disconnect(self, code: int) -> None:
        if self.worker is not None:
            self.worker.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.worker

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        received_at = time.perf_counter()
        try:
            frame = frame_parse(text_data, bytes_data)
        except ProtocolError as exc:
            await self.send_json(exc.frame())
            return
        if isinstance(frame, MessageFrame):
            await self._on_message(frame, received_at)
        elif isinstance(frame, IdentifyFrame):
            await self._on_identify(frame)
        elif isinstance(frame, PingFrame):
            await self.send_json({"type": "pong", "ts": frame.ts})
        elif isinstance(frame, RateFrame):
            await self._on_rate(frame)

    async def _on_rate(self, frame: RateFrame) -> None:
        try:
            rated = await database_sync_to_async(feedback_rate)(
                conversation_id=self.conversation_id, message_id=frame.message_id, value=frame.value
            )
        except FeedbackError as exc:
            await self.send_json({"type": "error", "code": exc.code, "message": str(exc)})
            return
        await self.send_json(
            {
                "type": "rated",
                "message_id": rated.message_id,
                "value": rated.value,
                "changed": rated.changed,
            }
        )

    async def _on_message(self, frame: MessageFrame, received_at: float) -> None:
        # The bot check runs before the message is stored or any model runs (pure, no I/O).
        bot_verdict = self.bot.check(frame.bot, text=frame.text)
        if not bot_verdict.allowed:
            await self._on_bot_refused(frame, bot_verdict)
            return
        try:
            stored = await database_sync_to_async(message_store_checked)(
                conversation_id=self.conversation_id,
                client_id=frame.client_id,
                text=frame.text,
                verdict=bot_verdict if self.bot.enabled else None,
            )
        except DatabaseError:
            # PostgreSQL restarting or unreachable: the message is NOT stored, so there
            # is no ack; the client resends with the same id (idempotent) and the
            # connection stays open instead of dying with a 1011.
            logger.warning("could not store message %s", frame.client_id, exc_info=True)
            await self.send_json(
                {
                    "type": "error",
                    "code": "store_unavailable",
                    "message": "We couldn't save your message just now; it will be sent again.",
                    "reply_to": frame.client_id,
                    "retry_after": 2,
                }
            )
            return
        message = stored.message
        # A resend of a stored message is answered only if nothing answered it yet and
        # this connection hasn't queued it already (the widget resends what it hasn't
        # seen acked; the ack may have been lost with a killed process).
        answer = stored.created or (stored.unanswered and message.pk not in self.queued)
        await self.send_json(
            {
                "type": "ack",
                "id": frame.client_id,
                "message_id": message.pk,
                "duplicate": not stored.created,
                "answering": answer,
            }
        )
        if not answer:
            return
        # Rate limits (docs/resilience.md): the message is stored; it is not answered.
        client = self.scope.get("client") or [None]
        verdict = await message_admit(session=self.rate_key, ip=client[0])
        if not verdict.allowed:
            await self.send_json(
                {
                    "type": "error",
                    "code": "rate_limited",
                    "message": "You're sending messages too fast; this one is saved. "
                    "Please try again shortly.",
                    "reply_to": frame.client_id,
                    "message_id": message.pk,
                    "retry_after": verdict.retry_after_s,
                    "limit": verdict.limit,
                }
            )
            return
        if self.queue.qsize() >= MAX_QUEUED_TURNS:
            await self.send_json(
                {
                    "type": "error",
                    "code": "rate_limited",
                    "message": (
                        "Too many messages at once; this one is saved but won't be answered."
                    ),
                    "reply_to": frame.client_id,
                    "retry_after": 5,
                }
            )
            return
        self.queued.add(message.pk)
        self.queue.put_nowait((message.pk, received_at))

    async def _on_bot_refused(self, frame: MessageFrame, verdict: Verdict) -> None:
        await database_sync_to_async(verdict_record)(
            conversation_id=self.conversation_id, client_id=frame.client_id, verdict=verdict
        )
        code, text = BOT_REFUSALS[verdict.action]
        await self.send_json(
            {"type": "error", "code": code, "message": text, "reply_to": frame.client_id}
        )
        if verdict.action == "refuse_connection":
            # No fingerprint at all: not our widget. Close rather than keep serving it.
            await self.close(code=4403)

    async def _on_identify(self, frame: IdentifyFrame) -> None:
        try:
            claims = shopper_token_verify(token=frame.token)
        except ShopperTokenError as exc:
            await self.send_json({"type": "error", "code": "bad_token", "message": str(exc)})
            return
        bound = await database_sync_to_async(services.conversation_identify)(
            conversation_id=self.conversation_id,
            customer_id=claims.customer_id,
            vip=claims.vip,
            method="token",
        )
        if not bound:
            await self.send_json(
                {
                    "type": "error",
                    "code": "identity_conflict",
                    "message": "This conversation belongs to another shopper; start a new one.",
                }
            )
            return
        await self.send_json({"type": "identified", "ok": True})

    async def _run_turns(self) -> None:
        while True:
            message_id, received_at = await self.queue.get()
            try:
                async for event in turn_stream(
                    conversation_id=self.conversation_id,
                    message_id=message_id,
                    received_at=received_at,
                ):
                    if isinstance(event, Chunk):
                        await self.send_json({"type": "chunk", "text": event.text})
                    elif isinstance(event, Replace):
                        await self.send_json({"type": "replace", "text": event.text})
                    elif isinstance(event, Done):
                        await self.send_json(event.frame)
                    elif isinstance(event, Failed):
                        await self.send_json(
                            {
                                "type": "error",
                                "code": event.code,
                                "message": event.message,
                                "message_id": message_id,
                            }
                        )
            except asyncio.CancelledError:
                raise
            except Exception:
                # turn_stream stores its own failures; this is the last line of defence
                # so one bad turn never kills the connection.
                logger.exception("turn crashed for message %s", message_id)
                await self.send_json(
                    {
                        "type": "error",
                        "code": "internal_error",
                        "message": "Something went wrong on our side; your message is saved.",
                        "message_id": message_id,
                    }
                )

    async def send_json(self, content: dict[str, Any]) -> None:
        await self.send(text_data=json.dumps(content, ensure_ascii=False))
