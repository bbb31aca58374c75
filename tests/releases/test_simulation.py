"""The gray release end to end, on a compressed clock.

A traffic generator plays shoppers: each session connects over the WebSocket to the
real ASGI application, identifies with a shop token, asks one question, rates the
reply (and every fifth session rates the conversation), and leaves. Both variants run
through the real code path: consumer, turn, dialogue and router, the release
assignment, the fact guard, the reply store, the per-minute metrics, the CSAT
service. After each round of traffic the release clock moves 20 minutes and the
Celery beat task ``releases.release_tick`` runs, as beat would.

The models are ``FakeBackend``s (tests/fakes.py) because the test must inject what a
real model can't be told to do: the candidate's fast model answers 300 ms late (the
injected latency regression). The stable fast model is a fake too, so both variants
differ only in what each case injects. The CSAT case injects shoppers who are less
happy with the candidate model's replies (they see which model answered in the done
frame); ratings are deterministic shares per variant, not random draws, so the equal
case cannot roll back on a coin flip.

Settings kept at their defaults: start 10%, +5% every 2 h, guardrail margins
(+15% p95, +0.5 pp errors, -2 pp CSAT), alpha 0.01, the rollback rule (a breach
confirmed on the minutes after it, or strong evidence in 2 evaluations in a row with the
sample; docs/releases.md), promotion after a 2 h hold. Settings
scaled to the simulated traffic (30 sessions per 20 minutes instead of a shop's
thousands): minimum sample 20 replies / 20 ratings per variant, a 120-minute latency
window and a 20% ceiling (instead of 50%, which takes 16 simulated hours to reach).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from channels.db import database_sync_to_async

from chatbot.models import Feedback, Message
from inference import registry
from releases import services
from releases.models import CANDIDATE, STABLE, GuardrailDecision, Release, ReleaseEvent
from releases.selectors import dashboard
from tests.fakes import FakeBackend
from tests.releases.conftest import FakeClock
from tests.shopper import Shopper

pytestmark = pytest.mark.django_db(transaction=True)

ROUND_MIN = 20
SESSIONS_PER_ROUND = 30
CONCURRENCY = 6
CANDIDATE_MODEL = "fake-fast-candidate"
STABLE_MODEL = "fake-fast-stable"


@pytest.fixture
def sim_settings(settings: Any) -> Any:
    settings.TIERDESK_RELEASE_MIN_REPLIES = 20
    settings.TIERDESK_RELEASE_MIN_RATINGS = 20
    settings.TIERDESK_RELEASE_MAX_WEIGHT = 20
    settings.TIERDESK_RELEASE_GUARD_WINDOW_MIN = 120
    # Prompt compression (spaCy) is not under test and costs CPU on every L1 turn.
    settings.TIERDESK_L1_COMPRESSION = False
    return settings


@pytest.fixture
def candidate_model() -> Iterator[FakeBackend]:
    fake = FakeBackend(role="fast_candidate", model_id=CANDIDATE_MODEL, chat=False)
    registry.register("fast_candidate", fake)
    yield fake
    registry.unregister("fast_candidate")


@dataclass
class Traffic:
    clock: FakeClock
    shoppers: list[tuple[str, str]]
    # Does the simulated shopper like this reply? Called with the done frame.
    likes: Callable[[dict[str, Any], int], bool]
    sessions: int = 0
    rated: Counter[str] = field(default_factory=Counter)
    tiers: Counter[str] = field(default_factory=Counter)

    async def session(self, n: int) -> None:
        customer, order = self.shoppers[n % len(self.shoppers)]
        shopper = await Shopper.connect()
        try:
            await shopper.identify(customer)
            # Mostly order questions (the fast model's tier), some greetings and noise.
            question = (
                "hello there"
                if n % 10 == 7
                else "qwzx plmokn"
                if n % 10 == 8
                else f"where is my order {order}?"
            )
            _text, done = await shopper.ask(question)
            assert done["type"] == "done", done
            self.tiers[done["tier"]] += 1
            # Shoppers' moods are counted per variant (read from the stored reply, which
            # only the generator may peek at), so "nine in ten" is exactly that for each
            # variant and an equal candidate can't lose on how the coin fell.
            variant = (await Message.objects.aget(pk=done["message_id"])).variant
            group = (
                f"{variant}:{'candidate-model' if done['model'] == CANDIDATE_MODEL else 'other'}"
            )
            self.rated[group] += 1
            happy = self.likes(done, self.rated[group])
            await shopper.rate("up" if happy else "down", done["message_id"])
            if n % 5 == 0:
                await shopper.rate(5 if happy else 2)
        finally:
            await shopper.close()

    async def round(self) -> None:
        gate = asyncio.Semaphore(CONCURRENCY)

        async def one(n: int) -> None:
            async with gate:
                await self.session(n)

        start = self.sessions
        self.sessions += SESSIONS_PER_ROUND
        await asyncio.gather(*(one(n) for n in range(start, self.sessions)))


def expected_weights(timeline: list[tuple[int, int, str]]) -> list[int]:
    """The weight after each beat by the schedule's rule (releases.decisions), given
    the beats' outcomes: +5% at a pass or insufficient beat once 2 h have gone by since
    the last step (the start counts as one), up to 20%; a breach holds; promotion
    serves everyone, and comes only after 2 h at the ceiling."""
    weight, last_step, at_max = 10, 0, None
    weights = []
    for minute, _, outcome in timeline:
        if outcome == "promote":
            assert at_max is not None and minute - at_max >= 2 * 60, (minute, at_max)
            weight = 100
        elif outcome in ("pass", "insufficient") and weight < 20 and minute - last_step >= 120:
            weight, last_step = weight + 5, minute
            at_max = minute if weight == 20 else None
        weights.append(weight)
    return weights


def nine_in_ten(done: dict[str, Any], count: int) -> bool:
    return count % 10 != 0


@database_sync_to_async
def shoppers_with_orders() -> list[tuple[str, str]]:
    from chatbot.orders.models import Order

    return list(
        Order.objects.order_by("order_id").values_list("customer__customer_id", "order_id")[:60]
    )


@database_sync_to_async
def start_candidate(user: Any) -> Release:
    draft = services.release_create(
        name="fast-v2",
        description="a new fast model for L1",
        config={"roles": {"L1": "fast_candidate"}},
        user=user,
        reason="simulation",
    )
    return services.release_start(release_id=draft.pk, user=user, reason="simulation")


@database_sync_to_async
def beat() -> dict[str, Any]:
    from releases.tasks import release_tick

    return dict(release_tick())  # the task body, run in-process as the worker would


async def drive(traffic: Traffic, release: Release, max_rounds: int) -> list[tuple[int, int, str]]:
    """Rounds of traffic and beats until the release stops running; the timeline."""
    timeline = []
    for n in range(max_rounds):
        traffic.clock.advance(minutes=ROUND_MIN)
        await traffic.round()
        outcome = await beat()
        await release.arefresh_from_db()
        timeline.append(((n + 1) * ROUND_MIN, release.weight, str(outcome.get("outcome"))))
        if release.status != Release.Status.RUNNING:
            break
    return timeline


@database_sync_to_async
def report(clock: FakeClock) -> dict[str, Any]:
    board = dashboard(until=clock.at, hours=12)
    return {name: w.summary() for name, w in board.by_variant.items()} | {
        "all": board.total.summary()
    }


async def assert_replies_store_their_variant(release: Release) -> None:
    replies = [m async for m in Message.objects.filter(role="bot")]
    assert replies and {m.variant for m in replies} <= {STABLE, CANDIDATE}
    for m in replies:
        if m.model == CANDIDATE_MODEL:
            assert m.variant == CANDIDATE and m.release_id == release.pk
        if m.variant == CANDIDATE:
            assert m.release_id == release.pk
    ratings = [f async for f in Feedback.objects.all()]
    assert ratings and all(f.variant in (STABLE, CANDIDATE) and f.tier for f in ratings)


async def test_latency_regression_is_frozen_and_rolled_back(
    seeded_shop: None,
    fake_models: dict[str, FakeBackend],
    candidate_model: FakeBackend,
    release_clock: FakeClock,
    sim_settings: Any,
    staff: dict[str, Any],
) -> None:
    fake_models["fast"].model_id = STABLE_MODEL
    candidate_model.first_delay_s = 0.3  # the injected latency regression
    release = await start_candidate(staff["operator"])
    traffic = Traffic(release_clock, await shoppers_with_orders(), nine_in_ten)
    timeline = await drive(traffic, release, max_rounds=18)
    print("\nlatency regression:", timeline, await report(release_clock))

    assert release.status == Release.Status.ROLLED_BACK and release.weight == 0
    decision = await GuardrailDecision.objects.aget(release=release, outcome="rollback")
    breached = {c["name"]: c for c in decision.numbers["checks"] if c["status"] == "breach"}
    assert "latency:all" in breached or "latency:L1" in breached
    check = breached.get("latency:L1") or breached["latency:all"]
    # (The stored numbers are rounded to 6 decimals.)
    assert check["candidate"] >= check["threshold"] >= check["stable"] * 1.15 - 1e-4
    assert check["n_candidate"] >= 20 and check["p_value"] < check["alpha"]
    assert "csat" not in breached and "errors" not in breached
    # The rule: a breach at alpha rolls back once the minutes after it (data it did not
    # see) breach too, or at once when the check breached with strong evidence (p below
    # alpha / the 360 evaluations planned for this release) in 2 evaluations in a row
    # among those where it had its sample. A +300 ms first chunk is strong evidence at
    # the minimum sample (z about 10 against the 4.2 needed), so the guarantee is the one
    # of the rule: rolled back at the second evaluation in which the breaching latency
    # check had its minimum sample, both breaches, or earlier, by confirmation. The
    # candidate's share of 30 sessions a round hovers around the minimum of 20, so beats
    # without the sample come in between; they neither count nor reset (counted as
    # passes whenever CSAT or errors had data, a 3x regression would run to 20%). The
    # strong-evidence path rolls back a regression this large as fast as two breaches
    # at alpha on overlapping windows would.
    fired = decision.numbers["rule"]["check"]
    assert fired in breached
    decisions = [
        d async for d in GuardrailDecision.objects.filter(release=release).order_by("at", "id")
    ]
    sampled = [
        (d, c["status"])
        for d in decisions
        for c in d.numbers["checks"]
        if c["name"] == fired and c["status"] != "insufficient"
    ]
    print(
        "sampled:",
        [
            {
                k: c[k]
                for k in ("status", "candidate", "stable", "threshold", "n_candidate", "p_value")
            }
            for d, _ in sampled
            for c in d.numbers["checks"]
            if c["name"] == fired
        ],
    )
    assert sampled[-1][0] == decision == decisions[-1]
    if decision.numbers["rule"]["path"] == "strong":
        assert decision.numbers["streaks"][fired] == 2
        assert [status for _, status in sampled] == ["breach", "breach"]
        assert all(
            c["p_value"] < c["alpha"] / 360
            for d, _ in sampled
            for c in d.numbers["checks"]
            if c["name"] == fired
        )
    else:
        confirmation = [c for c in decision.numbers["confirmation_checks"] if c["name"] == fired]
        assert confirmation[0]["status"] == "breach" and confirmation[0]["n_candidate"] >= 20
        assert [status for _, status in sampled] in (["breach"], ["breach", "breach"])
    # So within the configured windows, well before promotion (6 h). The schedule steps
    # to 20% at the 4 h beat, after evaluating: a rollback at that beat or earlier never
    # served 20%. The old assertion "never above 15%" in every run was wrong: it needs the
    # latency sample twice by 4 h, which the random share of sessions denies in about
    # 1.4% of runs whatever the rule (bench/guardrails.py, test regime:
    # latency_sample_twice_by_240min_plus200pct_test); it holds whenever the sample came.
    minute = timeline[-1][0]
    assert minute <= 6 * 60
    if minute <= 4 * 60:
        assert max(w for _, w, _ in timeline) <= 15
    actions = [
        (e.actor, e.action)
        async for e in ReleaseEvent.objects.filter(release=release).order_by("at", "id")
    ]
    assert actions[-2:] == [("system:guardrail", "freeze"), ("system:guardrail", "rollback")]
    await assert_replies_store_their_variant(release)
    # After the rollback every new session is served by the stable release.
    candidate_calls = len(candidate_model.calls)
    await traffic.round()
    assert len(candidate_model.calls) == candidate_calls
    latest = [
        m async for m in Message.objects.filter(role="bot").order_by("-id")[:SESSIONS_PER_ROUND]
    ]
    assert {m.variant for m in latest} == {STABLE}


async def test_csat_drop_is_frozen_and_rolled_back(
    seeded_shop: None,
    fake_models: dict[str, FakeBackend],
    candidate_model: FakeBackend,
    release_clock: FakeClock,
    sim_settings: Any,
    staff: dict[str, Any],
) -> None:
    fake_models["fast"].model_id = STABLE_MODEL

    def likes(done: dict[str, Any], count: int) -> bool:
        # Shoppers like half of the candidate model's replies, nine in ten of the rest.
        return count % 2 == 0 if done["model"] == CANDIDATE_MODEL else count % 10 != 0

    release = await start_candidate(staff["operator"])
    traffic = Traffic(release_clock, await shoppers_with_orders(), likes)
    timeline = await drive(traffic, release, max_rounds=18)
    print("\nCSAT drop:", timeline, await report(release_clock))

    assert release.status == Release.Status.ROLLED_BACK
    decision = await GuardrailDecision.objects.aget(release=release, outcome="rollback")
    breached = {c["name"]: c for c in decision.numbers["checks"] if c["status"] == "breach"}
    assert set(breached) == {"csat"}
    csat = breached["csat"]
    assert csat["stable"] - csat["candidate"] >= 0.02 and csat["n_candidate"] >= 20
    assert "CSAT" in decision.summary
    await assert_replies_store_their_variant(release)


async def test_equal_candidate_is_promoted_without_rollback(
    seeded_shop: None,
    fake_models: dict[str, FakeBackend],
    candidate_model: FakeBackend,
    release_clock: FakeClock,
    sim_settings: Any,
    staff: dict[str, Any],
) -> None:
    fake_models["fast"].model_id = STABLE_MODEL
    release = await start_candidate(staff["operator"])
    traffic = Traffic(release_clock, await shoppers_with_orders(), nine_in_ten)
    timeline = await drive(traffic, release, max_rounds=24)
    summary = await report(release_clock)
    print("\nequal candidate:", timeline, summary)

    assert release.status == Release.Status.PROMOTED and release.is_stable
    assert not await GuardrailDecision.objects.filter(release=release, outcome="rollback").aexists()
    weights = [w for _, w, _ in timeline]
    # The schedule: 10% -> 15% at 2 h -> 20% (the ceiling) at 4 h, promoted 2 h later,
    # when every beat passes. The two variants are the same fake, but latency is real
    # wall time on a shared machine, so an equal candidate can breach at alpha by
    # chance (CI, 2026-12-02: breaches at 100-140 min, never confirmed). A breach holds
    # the schedule, as it should, and the confirmation on later minutes clears it: that
    # delays promotion but must never roll back. So the timeline is replayed against the
    # rule from the beats' own outcomes instead of assuming none breached.
    assert weights[0] == 10 and 15 in weights and weights[-2] == 20
    assert timeline[-1][2] == "promote"
    assert expected_weights(timeline) == weights
    breaches = sum(1 for _, _, outcome in timeline if outcome == "breach")
    # False breaches at alpha 0.01 are rare; a run full of them is a bug, not noise.
    assert breaches <= 4, timeline
    assert timeline[-1][0] <= 6 * 60 + ROUND_MIN * breaches + 2 * 60
    if breaches == 0:
        assert timeline[-1][0] == 6 * 60
    promote = await GuardrailDecision.objects.aget(release=release, outcome="promote")
    statuses = {c["name"]: c["status"] for c in promote.numbers["checks"]}
    assert statuses["latency:all"] == "pass" and statuses["errors"] == "pass"
    assert summary["candidate"]["replies"] > 0 and summary["stable"]["replies"] > 0
    await assert_replies_store_their_variant(release)
