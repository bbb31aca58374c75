"""Agents, operators and desk connections for the desk tests (real ASGI app, real
PostgreSQL and Redis channel layer)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth.models import Group
from django.test import Client

from tests.shopper import ORIGIN

AGENTS = "support agents"


def user_make(username: str, *, group: str | None = AGENTS, first_name: str = "") -> Any:
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user(
        username, password=username, is_staff=True, first_name=first_name
    )
    if group:
        user.groups.add(Group.objects.get(name=group))
    return user


@pytest.fixture
def make_user(db: None) -> Callable[..., Any]:
    return user_make


def session_cookie(user: Any) -> bytes:
    client = Client()
    client.force_login(user)
    name = settings.SESSION_COOKIE_NAME
    return f"{name}={client.cookies[name].value}".encode()


async def desk_connect(user: Any | None) -> tuple[WebsocketCommunicator, bool]:
    """A /ws/desk/ connection as ``user`` (None: anonymous); whether it was accepted."""
    from config.asgi import application

    headers = [ORIGIN]
    if user is not None:
        headers.append((b"cookie", await database_sync_to_async(session_cookie)(user)))
    comm = WebsocketCommunicator(application, "/ws/desk/", headers=headers)
    connected, _code = await comm.connect(timeout=20)
    return comm, connected


async def frame_of(
    comm: WebsocketCommunicator, kind: str, wait_s: float = 20, **match: Any
) -> dict[str, Any]:
    """The next frame of type ``kind`` (and matching fields), skipping others."""
    while True:
        frame = await comm.receive_json_from(timeout=wait_s)
        if frame.get("type") == kind and all(frame.get(k) == v for k, v in match.items()):
            return dict(frame)


@contextlib.asynccontextmanager
async def desk_open(user: Any) -> AsyncIterator[WebsocketCommunicator]:
    comm, connected = await desk_connect(user)
    assert connected
    try:
        yield comm
    finally:
        await comm.disconnect()
