"""Issue #15 item 5: handoff requests are counted from the stored turn (the reply row's
intent and route reason), not by matching words in the question, and a release
guardrail watches their share like the other figures."""

from __future__ import annotations

import pytest
from django.db.models import Sum

from releases.guardrails import BREACH, INSUFFICIENT, PASS
from releases.metrics import Window
from releases.models import MetricMinute
from tests.releases.conftest import GuardChecks
from tests.shopper import Shopper


def test_the_handoff_share_guardrail(guard_checks: GuardChecks) -> None:
    stable = Window(replies=2000, handoffs=60)  # 3%

    def status(candidate: Window) -> str:
        return guard_checks(candidate, stable)["handoffs"].status

    assert status(Window(replies=2000, handoffs=180)) == BREACH  # 9%
    assert status(Window(replies=2000, handoffs=70)) == PASS
    assert status(Window(replies=100, handoffs=50)) == INSUFFICIENT


def _handoffs() -> int:
    return MetricMinute.objects.aggregate(n=Sum("handoffs"))["n"] or 0


@pytest.mark.django_db(transaction=True)
async def test_turns_routed_to_a_person_are_counted_once_and_mentions_are_not(
    seeded_shop: None,
) -> None:
    shopper = await Shopper.connect()
    # Mentions of agents, humans and 人工 that are not requests for a person: the old
    # text pattern counted each of these.
    for text in (
        "is the travel agent discount still on?",
        "what does human-readable tracking mean",
        "人工智能手表有货吗",
    ):
        await shopper.ask(text)
    assert await MetricMinute.objects.acount() > 0
    assert await _count() == 0
    # A request for a person (the router's handoff rule): one; the "no" to the offer
    # (or the ticket form's follow-up) continues it and adds none.
    _, done = await shopper.ask("转人工")
    assert done["intent"] == "handoff"
    await shopper.ask("no")
    await shopper.close()
    assert await _count() == 1


async def _count() -> int:
    from asgiref.sync import sync_to_async

    return await sync_to_async(_handoffs)()
