"""The priority queue in front of model work.

``model_slot``: each model role has as many slots as it has parallel decoding slots;
waiting turns are served by weighted fair queueing, VIP weight 3 against 1, so under
contention VIP shoppers get three times the share without starving the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import time
from collections.abc import AsyncIterator

from django.conf import settings


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

    async def acquire(self, cls: str) -> float:
        """Wait for a slot; returns the seconds waited."""
        if self.active < self.capacity and not self._heap:
            self.active += 1
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
        return time.perf_counter() - started

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
    try:
        yield waited
    finally:
        gate.release()


def queue_reset() -> None:
    """Forget every gate (tests; a gate belongs to one event loop)."""
    _gates.clear()
