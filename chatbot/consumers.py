"""The chat WebSocket consumer: parse a frame, call its service, send what it returns.

The services and the refusals they raise live in ``receive`` and ``refusals``; every
refusal becomes its ``error`` frame in ``refusal_frame``, and nowhere else (in the
conversation's language: ``receive.refusal_frame_for``).

Each turn runs as its own task so the consumer keeps reading frames (pings, more
messages, the disconnect) while a reply streams; turns of one connection run one at
a time, in order. A disconnect cancels the running turn, which stores the partial
reply as incomplete.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any
from urllib.parse import parse_qs

from channels.generic.websocket import AsyncWebsocketConsumer

from .botcheck import BotSession
from .handoff import agents_group, group_frame, shopper_group
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
from .refusals import Refusal


class ChatConsumer(AsyncWebsocketConsumer):
    connection: Connection
    bot: BotSession
    turns: TurnQueue
    worker: asyncio.Task[None] | None = None

    @property
    def conversation_id(self) -> int:
        return self.connection.conversation_id

    def _client_ip(self) -> str | None:
        client = self.scope.get("client") or [None]
        return client[0]

    async def connect(self) -> None:
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        headers = dict(self.scope.get("headers") or [])
        self.connection = await conversation_connect(
            session_key=(query.get("session") or [""])[0] or None,
            client_ip=self._client_ip(),
            user_agent=headers.get(b"user-agent", b"").decode("latin-1"),
        )
        self.turns = TurnQueue()
        self.bot = BotSession.open()
        # Human handoff: the queue, the person's messages and typing reach this group.
        await self._group("add")
        await self.accept()
        await self.send_json(await hello_frame(connection=self.connection, bot=self.bot))
        self.worker = asyncio.create_task(self._run_turns())

    async def disconnect(self, code: int) -> None:
        if self.worker is not None:
            self.worker.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.worker
        await self._group("discard")

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        received_at = time.perf_counter()
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
        if receipt.refused is not None:
            raise receipt.refused
        if receipt.answer:
            self.turns.put(message_id=receipt.message_id, received_at=received_at)

    async def _run_turns(self) -> None:
        while True:
            message_id, received_at = await self.turns.get()
            async for frame in turn_frames(
                conversation_id=self.conversation_id,
                message_id=message_id,
                received_at=received_at,
            ):
                await self.send_json(frame)

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
