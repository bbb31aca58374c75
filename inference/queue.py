"""The priority queue in front of model work.

``model_slot``: each model role has as many slots as it has parallel decoding slots;
waiting turns are served by weighted fair queueing, VIP weight 3 against 1, so under
contention VIP shoppers get three times the share without starving the others.

Each gate also measures itself for admission control (``inference.admission``) and
Prometheus: how many hold a slot and wait now, a moving average of how long a slot is
held, and the waits so far.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import time
from collections.abc import AsyncIterator

from django.conf import settings


class Ewma:
    """Exponentially weighted moving average; ``None`` before the first sample."""

    def __init__(self, alpha: float = 0.2) -> None:
        self.alpha = alpha
        self.value: float | None = None
        self.n = 0

    def add(self, sample: float) -> None:
        self.n += 1
        self.value = (
            sample if self.value is None else self.value + self.alpha * (sample - self.value)
        )


class PriorityGate:
    """``capacity`` concurrent holders; waiters served by weighted fair queueing.

    Each waiter gets a virtual finish tag ``max(V, last[class]) + 1/weight``, and the
    smallest tag goes next; ``V`` is the tag of the last one served. With weights 3
    and 1, a steady mix of VIP and normal waiters is served 3:1.
    """

    def __init__(self, capacity: int, weights: dict[str, float]) -> None:
        self.capacity = max(1, capacity)
        self.weights = weights
        self.active = 0
        self.virtual = 0.0
        self.last: dict[str, float] = {}
        self._heap: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()
        self.served: list[str] = []  # the class of each waiter served, for tests
        self.hold = Ewma()  # seconds a slot is held (one generation), moving average
        self.waits = 0  # acquisitions so far, and the seconds they waited in all
        self.wait_s = 0.0

    @property
    def waiting(self) -> int:
        return sum(1 for _tag, _seq, future in self._heap if not future.done())

    async def acquire(self, cls: str) -> float:
        """Wait for a slot; returns the seconds waited."""
        if self.active < self.capacity and not self._heap:
            self.active += 1
            self.waits += 1
            return 0.0
        started = time.perf_counter()
        tag = max(self.virtual, self.last.get(cls, 0.0)) + 1.0 / self.weights.get(cls, 1.0)
        self.last[cls] = tag
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._heap, (tag, next(self._seq), future))
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.release()  # the slot was handed to us as we were cancelled
            raise
        self.served.append(cls)
        waited = time.perf_counter() - started
        self.waits += 1
        self.wait_s += waited
        return waited

    def release(self) -> None:
        while self._heap:
            tag, _seq, future = heapq.heappop(self._heap)
            if future.done():  # cancelled while waiting
                continue
            self.virtual = tag
            future.set_result(None)  # the slot passes straight to the waiter
            return
        self.active -= 1


_gates: dict[tuple[int, str], PriorityGate] = {}


def gate_for(role: str) -> PriorityGate:
    loop = asyncio.get_running_loop()
    key = (id(loop), role)
    gate = _gates.get(key)
    if gate is None:
        declared = settings.INFERENCE_BACKENDS.get(role, {})
        capacity = int(
            declared.get("CONFIG", {}).get("n_parallel") or settings.TIERDESK_REMOTE_CONCURRENCY
        )
        gate = PriorityGate(
            capacity,
            {"vip": settings.TIERDESK_VIP_WEIGHT, "normal": settings.TIERDESK_NORMAL_WEIGHT},
        )
        _gates[key] = gate
    return gate


@contextlib.asynccontextmanager
async def model_slot(*, role: str, vip: bool) -> AsyncIterator[float]:
    """Hold one of the role's model slots for the duration of a generation."""
    gate = gate_for(role)
    waited = await gate.acquire("vip" if vip else "normal")
    held_from = time.perf_counter()
    try:
        yield waited
    finally:
        gate.hold.add(time.perf_counter() - held_from)
        gate.release()


def gates_snapshot() -> dict[str, dict[str, float | int | None]]:
    """Every role's gate in this process (Daphne runs one event loop): slots, holding,
    waiting, the mean hold time, the waits so far and their seconds."""
    out: dict[str, dict[str, float | int | None]] = {}
    for (_loop, role), gate in list(_gates.items()):
        out[role] = {
            "slots": gate.capacity,
            "active": gate.active,
            "waiting": gate.waiting,
            "hold_s": gate.hold.value,
            "waits": gate.waits,
            "wait_s": gate.wait_s,
        }
    return out


def queue_reset() -> None:
    """Forget every gate (tests; a gate belongs to one event loop)."""
    _gates.clear()
