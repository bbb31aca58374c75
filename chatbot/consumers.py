"""The chat WebSocket consumer: parse a frame, call its service, send what it returns.

The services and the refusals they raise live in ``receive`` and ``refusals``; every
refusal becomes its ``error`` frame in ``refusal_frame``, and nowhere else (in the
conversation's language: ``receive.refusal_frame_for``).

Each turn runs as its own task so the consumer keeps reading frames (pings, more
messages, the disconnect) while a reply streams; turns of one connection run one at
a time, in order. A disconnect cancels the running turn, which stores the partial
reply as incomplete.

Load never becomes an error: a connection beyond the process's waiting-room
capacity is accepted, gets its ``hello``, and waits, told its place in line (``busy``
frames); its messages are stored and acked and answered once it is served. A message
over the global bucket or the dynamic window waits its turn the same way
(``chatbot.limits``); only the per-session and per-IP limits answer ``rate_limited``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from typing import Any
from urllib.parse import parse_qs

from channels.consumer import get_handler_name
from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.db import DatabaseError

from .botcheck import BotSession
from .handoff import agents_group, group_frame, shopper_group
from .limits import LOAD_LIMITS, load_admit, waiting_room
from .protocol import (
    IdentifyFrame,
    MessageFrame,
    PingFrame,
    RateFrame,
    TypingFrame,
    frame_parse,
)
from .receive import (
    Connection,
    TurnQueue,
    conversation_connect,
    conversation_identify_token,
    conversation_rate,
    hello_frame,
    message_receive,
    ping_answer,
    refusal_frame_for,
    turn_frames,
)
from .refusals import RateLimited, Refusal

logger = logging.getLogger(__name__)

# Messages held back by a load limit in this process, in arrival order ("you are n-th").
_load_line: list[int] = []


class ChatConsumer(AsyncWebsocketConsumer):
    connection: Connection
    bot: BotSession
    turns: TurnQueue
    worker: asyncio.Task[None] | None = None
    seat: asyncio.Future[None] | None = None

    @property
    def conversation_id(self) -> int:
        return self.connection.conversation_id

    def _client_ip(self) -> str | None:
        client = self.scope.get("client") or [None]
        return client[0]

    async def dispatch(self, message: dict[str, Any]) -> None:
        # Channels' own dispatch first closes old database connections on its one
        # thread-sensitive thread, a hop every frame of every connection queues for. This
        # consumer's database work runs in chatbot.threads, whose calls close their own
        # thread's connections, so the hop would only make frames wait.
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

    async def connect(self) -> None:
        # The handshake first, before any database work: a handshake that waits for the
        # database fails under load. Channels handles this connection's frames only once
        # connect() returns, so nothing is read before the hello.
        await self.accept()
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        headers = dict(self.scope.get("headers") or [])
        try:
            self.connection = await conversation_connect(
                session_key=(query.get("session") or [""])[0] or None,
                client_ip=self._client_ip(),
                user_agent=headers.get(b"user-agent", b"").decode("latin-1"),
            )
            self.bot = BotSession.open()
            hello = await hello_frame(connection=self.connection, bot=self.bot)
        except DatabaseError:
            # No conversation to hang the chat on: the widget reconnects after a close.
            logger.warning("could not open a conversation", exc_info=True)
            await self.close(code=1011)
            return
        self.turns = TurnQueue()
        self.load_held: set[int] = set()
        # Human handoff: the queue, the person's messages and typing reach this group.
        await self._group("add")
        await self.send_json(hello)
        self.seat = await waiting_room().enter(self._busy_sessions)
        self.worker = asyncio.create_task(self._run_turns())

    async def websocket_disconnect(self, message: dict[str, Any]) -> None:
        # As ``dispatch``: without the base class's hop to the thread-sensitive thread.
        # This consumer joins its group itself (``_group``), not through ``groups``.
        await self.disconnect(message["code"])
        raise StopConsumer()

    async def disconnect(self, code: int) -> None:
        if self.worker is not None:
            self.worker.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.worker
        if self.seat is not None:
            await waiting_room().leave(self.seat)
            self.seat = None
        await self._group("discard")

    async def _busy_sessions(self, position: int) -> None:
        await self.send_json({"type": "busy", "reason": "sessions", "position": position})

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        received_at = time.perf_counter()
        if not hasattr(self, "turns"):
            return  # connect() closed the socket: no conversation to put this in
        try:
            frame = frame_parse(text_data, bytes_data)
            if isinstance(frame, MessageFrame):
                await self._on_message(frame, received_at)
            elif isinstance(frame, IdentifyFrame):
                await self.send_json(
                    await conversation_identify_token(
                        conversation_id=self.conversation_id, frame=frame
                    )
                )
            elif isinstance(frame, PingFrame):
                await self.send_json(ping_answer(frame=frame))
            elif isinstance(frame, RateFrame):
                await self.send_json(
                    await conversation_rate(conversation_id=self.conversation_id, frame=frame)
                )
            elif isinstance(frame, TypingFrame):
                await group_frame(
                    agents_group(self.conversation_id),
                    {"type": "typing", "who": "shopper", "conversation": self.conversation_id},
                )
        except Refusal as refusal:
            # In the conversation's language (docs/i18n.md).
            await self.send_json(
                await refusal_frame_for(conversation_id=self.conversation_id, refusal=refusal)
            )
            if refusal.close_code is not None:
                await self.close(code=refusal.close_code)

    async def _on_message(self, frame: MessageFrame, received_at: float) -> None:
        receipt = await message_receive(
            conversation_id=self.conversation_id,
            frame=frame,
            bot=self.bot,
            turns=self.turns,
            rate_key=self.connection.rate_key,
            client_ip=self._client_ip(),
        )
        await self.send_json(receipt.ack)
        refused = receipt.refused
        if isinstance(refused, RateLimited) and refused.limit in LOAD_LIMITS and receipt.answering:
            # Load, not this shopper: the message waits its turn (``_load_wait``).
            self.load_held.add(receipt.message_id)
            self.turns.put(message_id=receipt.message_id, received_at=received_at)
            return
        if refused is not None:
            raise refused
        if receipt.answer:
            self.turns.put(message_id=receipt.message_id, received_at=received_at)

    async def _run_turns(self) -> None:
        if self.seat is not None:
            await asyncio.shield(self.seat)  # in line: messages wait, stored and acked
        while True:
            message_id, received_at = await self.turns.get()
            if message_id in self.load_held:
                self.load_held.discard(message_id)
                await self._load_wait(message_id)
            async for frame in turn_frames(
                conversation_id=self.conversation_id,
                message_id=message_id,
                received_at=received_at,
            ):
                await self.send_json(frame)

    async def _load_wait(self, message_id: int) -> None:
        """Poll the load limits until they let this message through (at most
        ``TIERDESK_LOAD_WAIT_MAX_S``), telling the shopper their place meanwhile."""
        _load_line.append(message_id)
        give_up = time.monotonic() + settings.TIERDESK_LOAD_WAIT_MAX_S
        try:
            while time.monotonic() < give_up:
                verdict = await load_admit()
                if verdict.allowed:
                    break
                position = _load_line.index(message_id) + 1
                await self.send_json({"type": "busy", "reason": "load", "position": position})
                await asyncio.sleep(min(1.0, max(0.05, verdict.retry_after)))
        finally:
            _load_line.remove(message_id)
        await self.send_json({"type": "busy", "reason": "load", "position": 0})

    async def _group(self, action: str) -> None:
        if self.channel_layer is None or not hasattr(self, "connection"):
            return
        group = shopper_group(self.conversation_id)
        with contextlib.suppress(Exception):  # Redis down: chat goes on without the desk
            if action == "add":
                await self.channel_layer.group_add(group, self.channel_name)
            else:
                await self.channel_layer.group_discard(group, self.channel_name)

    async def relay_frame(self, event: dict[str, Any]) -> None:
        """A frame from the desk (the person's message, typing, the queue) for this shopper."""
        await self.send_json(event["frame"])

    async def send_json(self, content: dict[str, Any]) -> None:
        await self.send(text_data=json.dumps(content, ensure_ascii=False))
