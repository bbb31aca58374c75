"""Issue #16: the model-phrased share (admission control) in the per-minute aggregates,
in Prometheus with the model queues, and watched by a release guardrail."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from inference.queue import gate_for, queue_reset
from releases.guardrails import BREACH, PASS
from releases.metrics import Window, reply_record, window_read
from releases.prom import exposition
from tests.releases.conftest import FakeClock, GuardChecks
from tests.releases.test_metrics import facts

DEGRADED = {"model_planned": True, "degraded": {"reason": "predicted", "budget_ms": 400}}


@pytest.mark.django_db
def test_degraded_replies_count_per_minute_and_in_prometheus(release_clock: FakeClock) -> None:
    start = release_clock.at
    reply_record(facts(metadata={"model_planned": True}))
    reply_record(facts(metadata=DEGRADED, model="", variant="candidate"))
    reply_record(facts(metadata=DEGRADED, model=""))
    reply_record(facts(metadata={}))  # a template reply: planned no model
    release_clock.advance(minutes=1)
    window = window_read(release_id=None, variant="stable", since=start, until=release_clock.at)
    assert window.replies == 3 and window.model_turns == 2 and window.degraded == 1
    assert window.model_phrased_share == 0.5
    assert window.summary()["model_phrased_share"] == 0.5
    text = exposition().decode()
    assert 'tierdesk_replies_degraded_total{reason="predicted",tier="L1",variant="candidate"}' in (
        text
    )
    assert 'tierdesk_window_model_phrased_ratio{tier="L1",variant="stable"} 0.5' in text


@pytest.mark.django_db(transaction=True)
def test_model_queue_gauges() -> None:
    async def scenario() -> str:
        gate = gate_for("fast")
        for _ in range(gate.capacity):
            await gate.acquire("normal")
        waiter = asyncio.create_task(gate.acquire("vip"))
        await asyncio.sleep(0)
        text = (await asyncio.to_thread(exposition)).decode()  # it reads the database too
        gate.release()
        await waiter
        return text

    queue_reset()
    try:
        text = asyncio.run(scenario())
    finally:
        queue_reset()
    assert 'tierdesk_model_queue_waiting{role="fast"} 1.0' in text
    assert 'tierdesk_model_queue_active{role="fast"}' in text
    assert "tierdesk_model_queue_wait_seconds_total" in text


def _w(model_turns: int, degraded: int) -> Window:
    return Window(replies=model_turns, model_turns=model_turns, degraded=degraded)


@pytest.mark.parametrize(
    ("cand", "stable", "status"),
    [(_w(400, 80), _w(400, 20), BREACH), (_w(400, 22), _w(400, 20), PASS)],
)
def test_degraded_share_guardrail(
    cand: Window,
    stable: Window,
    status: str,
    guard_checks: GuardChecks,
) -> None:
    check = guard_checks(cand, stable)["degraded"]
    assert check.status == status, check.line()
    if status == BREACH:
        assert check.candidate == 0.2 and check.stable == 0.05


@pytest.mark.django_db
def test_operator_console_shows_the_model_phrased_share(
    staff: dict[str, Any], release_clock: FakeClock
) -> None:
    from tests.releases.test_console import CONSOLE, client_for

    reply_record(facts(metadata={"model_planned": True}))
    for _ in range(3):
        reply_record(facts(metadata=DEGRADED, model=""))
    html = client_for(staff["operator"]).get(CONSOLE).content.decode()
    line = html.split('data-testid="model-phrased"', 1)[1].split("</p>", 1)[0]
    assert "<strong>25.0%</strong> of 4 replies that planned a model; 3 went out" in line
    assert "model-phrased</th>" in html and "<td>25.0%</td>" in html
