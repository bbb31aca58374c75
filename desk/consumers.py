"""The agent desk's WebSocket (``/ws/desk/``): a live inbox and the conversations.

Only signed-in users with ``desk.use_desk`` (the "support agents" group) connect;
everyone else is closed with 4403. Frames (JSON, docs/desk.md):

- from the desk: ``open``, ``claim``, ``send``, ``typing``, ``transfer``, ``resolve``,
  ``note``, ``presence``, ``kb_search``, ``ticket_answer``, ``ping``;
- to the desk: ``inbox`` (whenever the queue changes), ``conversation``, ``message``,
  ``typing``, ``note``, ``kb_results``, ``result`` (the outcome of an action), ``pong``.

Every database call runs in a worker thread (``database_sync_to_async``). Messages
are stored before they are relayed, so a reload on either side shows them.
"""

from __future__ import annotations

import contextlib
import json
import logging
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from chatbot.handoff import (
    agent_display_name,
    agent_message_store,
    agents_group,
    desk_changed,
    desk_group,
    group_frame,
    handoff_status,
    message_frame,
    presence_beat,
    presence_connect,
    presence_disconnect,
    presence_set,
    queue_broadcast,
    shopper_group,
)

from . import services

logger = logging.getLogger(__name__)

MAX_TEXT = 4000
FORBIDDEN = 4403


def _text(frame: dict[str, Any], name: str = "text") -> str:
    value = frame.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"field '{name}' must be a non-empty string")
    return value.strip()[:MAX_TEXT]


def _int(frame: dict[str, Any], name: str) -> int:
    value = frame.get(name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"field '{name}' must be an integer")
    return value


class DeskConsumer(AsyncWebsocketConsumer):
    user: Any
    name: str
    joined: set[int]

    async def connect(self) -> None:
        self.user = self.scope.get("user")
        if self.user is None or not await database_sync_to_async(services.is_agent)(self.user):
            await self.close(code=FORBIDDEN)
            return
        self.name = agent_display_name(self.user)
        self.joined = set()
        assert self.channel_layer is not None
        await self.channel_layer.group_add(desk_group(), self.channel_name)
        await database_sync_to_async(presence_connect)(user_id=self.user.pk)
        await self.accept()
        await self._send_inbox()
        await desk_changed()  # the others' transfer menus show this agent online

    async def disconnect(self, code: int) -> None:
        if not hasattr(self, "joined"):
            return
        await database_sync_to_async(presence_disconnect)(user_id=self.user.pk)
        if self.channel_layer is not None:
            with contextlib.suppress(Exception):
                await self.channel_layer.group_discard(desk_group(), self.channel_name)
                for conversation_id in self.joined:
                    await self.channel_layer.group_discard(
                        agents_group(conversation_id), self.channel_name
                    )

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        try:
            frame = json.loads(text_data or "")
            if not isinstance(frame, dict):
                raise ValueError("frame must be a JSON object")
            handler = getattr(self, f"_on_{frame.get('type')}", None)
            if handler is None:
                raise ValueError(f"unknown frame type {str(frame.get('type'))[:40]!r}")
            await handler(frame)
        except services.DeskDenied as exc:
            await self._send({"type": "error", "code": "forbidden", "message": str(exc)})
        except ValueError as exc:
            await self._send({"type": "error", "code": "bad_frame", "message": str(exc)})

    # -- frames from the desk ---------------------------------------------------------------

    async def _on_ping(self, frame: dict[str, Any]) -> None:
        await database_sync_to_async(presence_beat)(user_id=self.user.pk)
        # Any open desk puts the conversations of agents gone too long back in the queue.
        if await database_sync_to_async(services.requeue_abandoned)():
            await desk_changed()
            await queue_broadcast()
        await self._send({"type": "pong", "ts": frame.get("ts")})

    async def _on_presence(self, frame: dict[str, Any]) -> None:
        await database_sync_to_async(presence_set)(
            user_id=self.user.pk, status=str(frame.get("status"))
        )
        await desk_changed()

    async def _on_open(self, frame: dict[str, Any]) -> None:
        conversation_id = _int(frame, "conversation")
        detail = await database_sync_to_async(services.conversation_detail)(
            agent_id=self.user.pk, conversation_id=conversation_id
        )
        await self._join(conversation_id)
        await self._send(detail)

    async def _on_claim(self, frame: dict[str, Any]) -> None:
        conversation_id = _int(frame, "conversation")
        outcome = await database_sync_to_async(services.claim)(
            agent_id=self.user.pk, conversation_id=conversation_id
        )
        await self._result("claim", conversation_id, outcome)
        if outcome.ok:
            await self._join(conversation_id)
            await group_frame(
                shopper_group(conversation_id),
                {"type": "handoff", "status": "claimed", "agent": self.name},
            )
            await self._on_open(frame)
            await queue_broadcast()  # everyone behind it moves up
        await desk_changed()

    async def _on_send(self, frame: dict[str, Any]) -> None:
        conversation_id = _int(frame, "conversation")
        message = await database_sync_to_async(agent_message_store)(
            conversation_id=conversation_id,
            agent_id=self.user.pk,
            text=_text(frame),
            agent_name=self.name,
        )
        if message is None:
            raise services.DeskDenied("claim the conversation before replying")
        relayed = message_frame(message, name=self.name)
        await group_frame(shopper_group(conversation_id), relayed)
        await self._send({**relayed, "id": frame.get("id")})
        await group_frame(agents_group(conversation_id), relayed)

    async def _on_typing(self, frame: dict[str, Any]) -> None:
        conversation_id = _int(frame, "conversation")
        await group_frame(
            shopper_group(conversation_id),
            {"type": "typing", "who": "agent", "agent": self.name},
        )

    async def _on_transfer(self, frame: dict[str, Any]) -> None:
        conversation_id = _int(frame, "conversation")
        outcome = await database_sync_to_async(services.transfer)(
            agent_id=self.user.pk, conversation_id=conversation_id, to_agent_id=_int(frame, "to")
        )
        await self._result("transfer", conversation_id, outcome)
        if outcome.ok:
            status = await database_sync_to_async(handoff_status)(conversation_id=conversation_id)
            if status is not None:
                await group_frame(shopper_group(conversation_id), status)
            await desk_changed()

    async def _on_resolve(self, frame: dict[str, Any]) -> None:
        conversation_id = _int(frame, "conversation")
        outcome = await database_sync_to_async(services.resolve)(
            agent_id=self.user.pk, conversation_id=conversation_id
        )
        await self._result("resolve", conversation_id, outcome)
        if outcome.ok:
            await group_frame(
                shopper_group(conversation_id),
                {"type": "handoff", "status": "resolved", "agent": self.name},
            )
            await desk_changed()

    async def _on_note(self, frame: dict[str, Any]) -> None:
        conversation_id = _int(frame, "conversation")
        note = await database_sync_to_async(services.note_add)(
            agent_id=self.user.pk, conversation_id=conversation_id, text=_text(frame)
        )
        # To the agents' group only: the shopper's group never sees a note.
        await group_frame(
            agents_group(conversation_id),
            {
                "type": "note",
                "conversation": conversation_id,
                "id": note.pk,
                "text": note.text,
                "author": self.name,
            },
        )

    async def _on_kb_search(self, frame: dict[str, Any]) -> None:
        results = await database_sync_to_async(services.kb_search)(
            query=_text(frame, "q"), language=str(frame.get("language") or "en")
        )
        await self._send(results)

    async def _on_ticket_answer(self, frame: dict[str, Any]) -> None:
        ticket_id = _int(frame, "ticket")
        outcome = await database_sync_to_async(services.ticket_answer)(
            agent_id=self.user.pk, ticket_id=ticket_id, text=_text(frame)
        )
        await self._send(
            {
                "type": "result",
                "action": "ticket_answer",
                "ticket": ticket_id,
                "ok": outcome.ok,
                "reason": outcome.reason,
            }
        )
        if outcome.ok:
            await desk_changed()

    # -- from the channel layer -------------------------------------------------------------

    async def relay_frame(self, event: dict[str, Any]) -> None:
        frame = event["frame"]
        if frame.get("type") == "queue_changed":
            await self._send_inbox()
        else:
            await self._send(frame)

    # -- helpers ----------------------------------------------------------------------------

    async def _join(self, conversation_id: int) -> None:
        if conversation_id in self.joined or self.channel_layer is None:
            return
        await self.channel_layer.group_add(agents_group(conversation_id), self.channel_name)
        self.joined.add(conversation_id)

    async def _send_inbox(self) -> None:
        await self._send(await database_sync_to_async(services.inbox)(agent_id=self.user.pk))

    async def _result(self, action: str, conversation_id: int, outcome: services.Outcome) -> None:
        await self._send(
            {
                "type": "result",
                "action": action,
                "conversation": conversation_id,
                "ok": outcome.ok,
                "reason": outcome.reason,
            }
        )

    async def _send(self, frame: dict[str, Any]) -> None:
        await self.send(text_data=json.dumps(frame, ensure_ascii=False))
