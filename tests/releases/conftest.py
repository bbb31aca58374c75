"""Fixtures for the gray-release tests: a compressed clock, users in each staff group,
and the guardrails run on a candidate and a stable window alone."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from releases import clock
from releases.guardrails import Check, GuardSettings, evaluate
from releases.metrics import Window

# Guardrail settings small enough for synthetic windows of a few hundred replies.
GUARD_CFG = GuardSettings(min_replies=200, min_ratings=100, alpha=0.01)
GuardChecks = Callable[[Window, Window], dict[str, Check]]


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


@pytest.fixture
def guard_checks() -> GuardChecks:
    """The guardrail checks, by name, for a candidate and a stable window without
    per-tier or CSAT data (a test of one share-of-replies figure)."""

    def checks(candidate: Window, stable: Window) -> dict[str, Check]:
        result = evaluate(
            candidate=candidate,
            stable=stable,
            candidate_tiers={},
            stable_tiers={},
            candidate_csat=Window(),
            stable_csat=Window(),
            cfg=GUARD_CFG,
        )
        return {c.name: c for c in result.checks}

    return checks
