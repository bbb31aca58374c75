"""Issue #16: an admitted turn's cut-off is a timer on the event loop, and a loop that
runs timers late sends the degraded text late. The cut-off moves earlier by the
lateness the loop showed in the last seconds (``inference.looplag``).

The stalls are real: the loop is blocked with ``time.sleep`` the way a burst of other
connections' work (or a planning thread holding the GIL) blocks it under load."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from inference.admission import LAG_CAP_SHARE, admission, admission_reset
from inference.looplag import WINDOW_S, LoopLag, loop_lag


@pytest.fixture(autouse=True)
def _fresh(settings: Any) -> Iterator[None]:
    settings.TIERDESK_ADMISSION = True
    settings.TIERDESK_FIRST_CHUNK_BUDGET_MS = {"L1": 400, "L2": 800, "L3": 1500}
    settings.TIERDESK_FIRST_CHUNK_SEND_MS = 20
    settings.TIERDESK_FIRST_CHUNK_MARGIN_MS = 60
    admission_reset()
    yield
    admission_reset()


async def _stall(times: int, block_s: float) -> None:
    for _ in range(times):
        time.sleep(block_s)  # noqa: ASYNC251 -- the point: the loop can run nothing else
        await asyncio.sleep(0)


async def test_a_late_loop_moves_the_cut_off_earlier() -> None:
    gate = admission()
    loop_lag()  # the monitor starts with the process's first turn
    await asyncio.sleep(0.3)
    at = time.perf_counter()
    idle = gate.admit(tier="L1", role="fast", received_at=at, now=at)
    assert idle.admitted and idle.deadline is not None
    await _stall(12, 0.08)
    at = time.perf_counter()
    busy = gate.admit(tier="L1", role="fast", received_at=at, now=at)
    assert busy.deadline is not None
    # Each stall woke the monitor's 25 ms timer at least 55 ms late.
    assert busy.loop_lag_ms >= 50
    assert busy.deadline - at == pytest.approx((400 - 20 - busy.loop_lag_ms) / 1000, abs=1e-6)
    assert busy.deadline - at < idle.deadline - idle.admitted_at - 0.04
    # The verdict a cut-off turn reports says by how much.
    assert busy.degraded("deadline")["loop_lag_ms"] == round(busy.loop_lag_ms, 1)


async def test_a_stall_longer_than_a_quarter_budget_moves_it_no_further() -> None:
    gate = admission()
    loop_lag()
    await asyncio.sleep(0.05)
    await _stall(8, 0.2)
    at = time.perf_counter()
    ticket = gate.admit(tier="L1", role="fast", received_at=at, now=at)
    assert ticket.loop_lag_ms == 400 * LAG_CAP_SHARE
    assert ticket.deadline is not None
    assert ticket.deadline - at == pytest.approx((400 - 20 - 100) / 1000, abs=1e-6)


def test_old_lateness_is_forgotten() -> None:
    lag = LoopLag()
    for i in range(20):
        lag.add(100.0 + i * 0.025, 0.2)
    assert lag.recent_s(now=100.5) == pytest.approx(0.2)
    # WINDOW_S later with no late wake-up since: nothing recent.
    assert lag.recent_s(now=100.5 + WINDOW_S + 0.1) == 0.0
    for i in range(20):
        lag.add(104.0 + i * 0.025, 0.001)
    lag.add(104.6, 0.3)  # the latest wake-up of the window counts, however rare
    assert lag.recent_s(now=104.7) == pytest.approx(0.3)
    assert lag.recent_s(now=104.6 + WINDOW_S + 0.01) == 0.0
