"""Fixtures for the gray-release tests: a compressed clock, users in each staff group,
and a WebSocket shopper that talks to the real ASGI application."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from releases import clock


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
