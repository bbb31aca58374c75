"""The per-process reply buffer of the release metrics: buffered replies
reach the same minute rows as replies written one by one, by the flush thread itself,
and a row that can't be written doesn't stop the others. Fast: no models, < 2 s."""

from __future__ import annotations

import time
from typing import Any

import pytest

from releases import metrics
from releases.metrics import REPLY_SUMS, ReplyBuffer, reply_record
from releases.models import MetricMinute
from tests.releases.conftest import FakeClock
from tests.releases.test_metrics import facts


def replies(tier: str) -> list[Any]:
    """A minute's worth of different replies: timed, untimed, failed, degraded, handoff."""
    return [
        facts(tier=tier, first_chunk_ms=120.0),
        facts(tier=tier, first_chunk_ms=480.0, metadata={"model_planned": True}),
        facts(tier=tier, status="error", first_chunk_ms=None),
        facts(
            tier=tier,
            model="",
            prompt_tokens=0,
            completion_tokens=0,
            metadata={"model_planned": True, "degraded": {"reason": "predicted"}},
        ),
        facts(tier=tier, intent="handoff", route_reason={"kind": "rule"}),
    ]


@pytest.mark.django_db
def test_buffered_replies_add_up_to_the_rows_written_one_by_one(
    settings: Any, release_clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.TIERDESK_METRICS_FLUSH_S = 0
    for fact in replies("L1"):
        reply_record(fact)  # written at once, one locked row update each

    buffer = ReplyBuffer(thread=False)
    monkeypatch.setattr(metrics, "REPLY_BUFFER", buffer)
    settings.TIERDESK_METRICS_FLUSH_S = 5
    for fact in replies("L2") + replies("L2"):
        reply_record(fact)
    reply_record(facts(tier="L2"), at=release_clock.advance(minutes=1))  # the next minute
    assert not MetricMinute.objects.filter(tier="L2").exists()
    assert buffer.pending() == 11

    assert buffer.flush() == 11
    assert buffer.pending() == 0
    one = MetricMinute.objects.get(tier="L1")
    first, second = MetricMinute.objects.filter(tier="L2").order_by("minute")
    assert first.minute == one.minute and second.replies == 1
    for name in (*REPLY_SUMS, "latency_count", "latency_sum_ms"):
        assert getattr(first, name) == pytest.approx(2 * getattr(one, name)), name
    assert first.latency_hist == [2 * n for n in one.latency_hist]


@pytest.mark.django_db(transaction=True)
def test_the_thread_flushes_and_a_row_that_fails_is_dropped_alone(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    buffer = ReplyBuffer()
    monkeypatch.setattr(metrics, "REPLY_BUFFER", buffer)
    settings.TIERDESK_METRICS_FLUSH_S = 0.2
    try:
        # A release that does not exist (deleted since): its row fails on the foreign
        # key at commit, a real PostgreSQL error, and only its counts are lost.
        reply_record(facts(release_id=987654))
        for _ in range(3):
            reply_record(facts())
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not MetricMinute.objects.exists():
            time.sleep(0.05)
        assert MetricMinute.objects.exists()  # written by the thread, not by stop()
    finally:
        buffer.stop()  # ends the thread and closes its database connection
    rows = list(MetricMinute.objects.all())
    assert [(row.release_id, row.replies) for row in rows] == [(None, 3)]
