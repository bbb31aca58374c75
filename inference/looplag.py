"""How late this process's event loop runs a timer, measured all the time.

Admission control cuts an admitted turn off at its deadline with a timer on the event
loop (``chatbot.turn``), and the degraded text then goes out on the same loop. Under
load the loop runs a timer late: other connections' frames, and the turn-planning
threads holding the GIL, come first. ``make load`` at 200 sessions: L1
turns cut off at 380 ms left the server at up to 430-560 ms, L3 ones at 1.48 s at up
to 1.56 s, so the tiers' first-chunk p95 went over budgets the cut-offs were meant to
keep. A fixed margin large enough for the busiest minute would degrade turns on an
idle loop for nothing, so the cut-off is moved earlier by the lateness measured in the
last seconds instead (``Admission.admit``).

One task per event loop sleeps ``INTERVAL_S`` again and again and records how much
later than asked it woke up (what the deadline's timer will see); ``recent_s()`` is a
highest lateness of the last ``WINDOW_S``: a cut-off must be in time also in the
busiest of the recent loop turns (at 200 sessions the 90th percentile, ~20 ms, left
L3 cut-offs at 1.48 s going out at up to 1.54 s). Cost: one wake-up per ``INTERVAL_S``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections import deque

INTERVAL_S = 0.025
WINDOW_S = 3.0
PERCENTILE = 100


class LoopLag:
    """The lateness samples of one event loop: (monotonic time, seconds late)."""

    def __init__(self) -> None:
        self.samples: deque[tuple[float, float]] = deque(maxlen=int(WINDOW_S / INTERVAL_S) + 8)

    def add(self, at: float, late_s: float) -> None:
        self.samples.append((at, max(0.0, late_s)))

    def recent_s(self, now: float | None = None) -> float:
        """The ``PERCENTILE``th percentile lateness over the last ``WINDOW_S`` (0 when
        nothing was measured yet)."""
        now = time.monotonic() if now is None else now
        values = sorted(late for at, late in self.samples if now - at <= WINDOW_S)
        if not values:
            return 0.0
        return values[min(len(values) - 1, len(values) * PERCENTILE // 100)]

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            asked = loop.time() + INTERVAL_S
            await asyncio.sleep(INTERVAL_S)
            self.add(time.monotonic(), loop.time() - asked)


_monitors: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, tuple[LoopLag, asyncio.Task[None]]
] = weakref.WeakKeyDictionary()


def loop_lag() -> LoopLag:
    """The running loop's monitor, started on first use (call from the loop)."""
    loop = asyncio.get_running_loop()
    entry = _monitors.get(loop)
    if entry is None or entry[1].done():
        lag = entry[0] if entry is not None else LoopLag()
        entry = (lag, loop.create_task(lag.run(), name="tierdesk-loop-lag"))
        _monitors[loop] = entry
    return entry[0]


def loop_lag_reset() -> None:
    """Stop every monitor (tests)."""
    for _lag, task in list(_monitors.values()):
        with contextlib.suppress(RuntimeError):  # its loop is closed: nothing runs it
            task.cancel()
    _monitors.clear()
