"""Fixtures for the gray-release tests: a compressed clock, users in each staff group,
and a WebSocket shopper that talks to the real ASGI application."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator

from releases import clock

ORIGIN = (b"origin", b"http://localhost")


@dataclass
class FakeClock:
    """Release time that tests move by hand: hours pass in a function call."""

    at: datetime = field(default_factory=lambda: datetime(2026, 11, 30, 8, 0, tzinfo=UTC))

    def __call__(self) -> datetime:
        return self.at

    def advance(self, *, minutes: float) -> datetime:
        self.at += timedelta(minutes=minutes)
        return self.at


@pytest.fixture
def release_clock() -> Iterator[FakeClock]:
    fake = FakeClock()
    clock.install(fake)
    yield fake
    clock.reset()


@pytest.fixture
def staff(db: None) -> dict[str, Any]:
    """One user per role: an operator, a support admin and a staff user in no group."""
    from django.contrib.auth.models import Group, User

    from releases.permissions import OPERATORS, SUPPORT_ADMINS, groups_ensure

    groups_ensure()
    users: dict[str, Any] = {}
    for name, group in (("operator", OPERATORS), ("support", SUPPORT_ADMINS), ("nobody", None)):
        user = User.objects.create_user(name, password="pw-" + name, is_staff=True)
        if group:
            user.groups.add(Group.objects.get(name=group))
        users[name] = user
    return users


class Shopper:
    """One widget session over the real ASGI app (consumer, turn, services)."""

    def __init__(self, comm: WebsocketCommunicator, hello: dict[str, Any]) -> None:
        self.comm = comm
        self.hello = hello
        self._n = 0

    @classmethod
    async def connect(cls, session: str | None = None) -> Shopper:
        from config.asgi import application

        path = "/ws/chat/" + (f"?session={session}" if session else "")
        comm = WebsocketCommunicator(application, path, headers=[ORIGIN])
        connected, _ = await comm.connect(timeout=20)
        assert connected
        hello = await comm.receive_json_from(timeout=20)
        assert hello["type"] == "hello"
        return cls(comm, hello)

    async def identify(self, customer_id: str) -> None:
        from chatbot.orders.identity import shopper_token_issue

        await self.comm.send_json_to(
            {"type": "identify", "token": shopper_token_issue(customer_id=customer_id)}
        )
        assert (await self.comm.receive_json_from(timeout=20))["type"] == "identified"

    async def ask(self, text: str) -> tuple[str, dict[str, Any]]:
        """Send a message; return the reply text as shown and the done frame."""
        self._n += 1
        await self.comm.send_json_to({"type": "message", "id": f"m{self._n}", "text": text})
        text_shown = ""
        while True:
            frame = await self.comm.receive_json_from(timeout=60)
            if frame["type"] == "chunk":
                text_shown += frame["text"]
            elif frame["type"] == "replace":
                text_shown = frame["text"]
            elif frame["type"] in ("done", "error"):
                return text_shown, frame

    async def rate(self, value: str | int, message_id: int | None = None) -> dict[str, Any]:
        frame: dict[str, Any] = {"type": "rate", "value": value}
        if message_id is not None:
            frame["message_id"] = message_id
        await self.comm.send_to(text_data=json.dumps(frame))
        return dict(await self.comm.receive_json_from(timeout=20))

    async def close(self) -> None:
        await self.comm.disconnect()
