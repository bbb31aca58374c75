"""Per-minute aggregates, modelled cost against the all-L3 baseline, and /metrics."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from releases import metrics
from releases.metrics import ReplyFacts, reply_record, window_by_tier, window_read
from releases.models import MetricMinute
from tests.releases.conftest import FakeClock

pytestmark = pytest.mark.django_db


def facts(**over: Any) -> ReplyFacts:
    base: dict[str, Any] = {
        "release_id": None,
        "variant": "stable",
        "tier": "L1",
        "status": "complete",
        "model": "gemma3-270m-q4km",
        "first_chunk_ms": 200.0,
        "prompt_tokens": 100,
        "completion_tokens": 20,
        "question": "where is my order #W2611340?",
        "text": "Your order #W2611340 has shipped and arrives on Dec 2, 2026.",
        "metadata": {"guard": "passed"},
    }
    return ReplyFacts(**(base | over))


def test_replies_aggregate_per_minute_variant_and_tier(release_clock: FakeClock) -> None:
    start = release_clock.at
    for ms in (100.0, 200.0, 300.0):
        reply_record(facts(first_chunk_ms=ms))
    reply_record(facts(status="error", first_chunk_ms=None))
    reply_record(
        facts(
            metadata={"fallback": {"reason": "timeout"}},
            tier="L3",
            model="qwen2.5-coder-0.5b-instruct-q4km",
        )
    )
    reply_record(
        facts(
            question="can I talk to a human please",
            tier="L1",
            intent="handoff",
            route_reason={"kind": "rule", "rule": "handoff-request"},
        )
    )
    release_clock.advance(minutes=1)
    reply_record(facts(variant="candidate", first_chunk_ms=900.0))
    assert MetricMinute.objects.count() == 3  # one row per (minute, variant, tier)
    stable = window_read(release_id=None, variant="stable", since=start, until=release_clock.at)
    assert (
        stable.replies == 6
        and stable.errors == 1
        and stable.fallbacks == 1
        and stable.handoffs == 1
    )
    assert stable.prompt_tokens == 600 and stable.latency_n == 5
    l1 = window_by_tier(release_id=None, variant="stable", since=start, until=release_clock.at)[
        "L1"
    ]
    assert abs((l1.p(0.5) or 0) - 200) < 20  # the histogram's resolution is ~10%
    # A timeout fallback is a policy, not an error; a failed reply is an error.
    assert l1.errors == 1 and l1.replies == 5
    later = window_read(
        release_id=None,
        variant=None,
        since=start + timedelta(minutes=1),
        until=release_clock.at + timedelta(minutes=1),
    )
    assert later.replies == 1 and (later.p(0.95) or 0) > 800


def test_cost_is_modelled_against_the_all_l3_baseline(
    settings: Any, release_clock: FakeClock
) -> None:
    settings.TIERDESK_MODEL_PRICES = {"cheap": [0.1, 0.1], "big": [1.0, 4.0], "*": [1.0, 4.0]}
    settings.TIERDESK_COST_BASELINE_MODEL = "big"
    settings.TIERDESK_COST_BASELINE_PROMPT_TOKENS = 100
    question, answer = "q" * 40, "a" * 80  # 10 and 20 estimated tokens
    reply_record(
        facts(
            model="cheap", prompt_tokens=200, completion_tokens=30, question=question, text=answer
        )
    )
    reply_record(
        facts(model="", prompt_tokens=0, completion_tokens=0, question=question, text=answer)
    )
    w = window_read(
        release_id=None,
        variant=None,
        since=release_clock.at,
        until=release_clock.at + timedelta(minutes=1),
    )
    # cheap model: 230 tokens at 0.1/M; the template reply cost nothing.
    assert w.cost == pytest.approx(230 * 0.1 / 1e6)
    # baseline: the first reply's own counts (200 > 100 + 10, 30 > 20); the second the estimate.
    assert w.baseline_cost == pytest.approx((200 * 1 + 30 * 4 + 110 * 1 + 20 * 4) / 1e6)
    assert w.saving_ratio == pytest.approx(1 - w.cost / w.baseline_cost)
    assert metrics.estimate_tokens("订单明天送达") == 6


def test_handoff_requests_are_counted_from_the_stored_intent_not_the_text() -> None:
    routed = {"kind": "rule", "rule": "handoff-request", "match": "转人工"}
    assert metrics.handoff_requested(intent="handoff", route_reason=routed)
    # The bot offered a person because it was stuck: the turn was routed, then offered.
    stuck = {"kind": "classifier", "why": "low_confidence", "top": [["order_status", 0.3]]}
    assert metrics.handoff_requested(intent="handoff", route_reason=stuck)
    # The shopper's "yes"/"no" to the offer continues it: not a second request.
    assert not metrics.handoff_requested(intent="handoff", route_reason={})
    # Words the old text pattern counted, in turns the router sent elsewhere.
    assert not metrics.handoff_requested(intent="order_status", route_reason=routed)
    assert not metrics.handoff_requested(intent="knowledge_question", route_reason={"kind": "x"})


def test_prometheus_exposition_has_counters_and_window_gauges(release_clock: FakeClock) -> None:
    from releases.prom import exposition

    reply_record(facts(variant="candidate", tier="L1", first_chunk_ms=250.0))
    lines = exposition().decode().splitlines()

    def sample(name: str) -> str | None:
        for line in lines:
            labels = line.partition("{")[2]
            if (
                line.startswith(name + "{")
                and 'variant="candidate"' in labels
                and 'tier="L1"' in labels
            ):
                return line
        return None

    replies = sample("tierdesk_replies_total")
    assert replies is not None and float(replies.rsplit(" ", 1)[1]) >= 1
    assert sample("tierdesk_first_chunk_seconds_bucket") is not None
    p95 = sample("tierdesk_window_first_chunk_p95_seconds")
    assert p95 is not None and 0.2 < float(p95.rsplit(" ", 1)[1]) < 0.3
    assert any(line.startswith("tierdesk_window_cost_saving_ratio{") for line in lines)
