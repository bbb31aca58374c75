"""The priority queue in front of model work: weighted fair queueing (no models)."""

from __future__ import annotations

import asyncio

import pytest

from inference.queue import PriorityGate

pytestmark = pytest.mark.usefixtures("isolated_state")


async def test_priority_queue_serves_vip_three_to_one() -> None:
    gate = PriorityGate(capacity=1, weights={"vip": 3, "normal": 1})
    await gate.acquire("normal")  # the one slot is busy
    waiters = [asyncio.create_task(gate.acquire(c)) for c in ["normal"] * 8 + ["vip"] * 8]
    await asyncio.sleep(0)
    for _ in range(len(waiters)):
        gate.release()
        await asyncio.sleep(0)
    await asyncio.gather(*waiters)
    first_eight = gate.served[:8]
    assert first_eight.count("vip") == 6 and first_eight.count("normal") == 2
    assert gate.served.count("normal") == 8  # nobody starves


async def test_priority_queue_cancelled_waiter_gives_back_nothing() -> None:
    gate = PriorityGate(capacity=1, weights={"vip": 3, "normal": 1})
    await gate.acquire("normal")
    waiting = asyncio.create_task(gate.acquire("vip"))
    await asyncio.sleep(0)
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
    gate.release()
    assert gate.active == 0
    assert await gate.acquire("normal") == 0.0


@pytest.mark.parametrize("n", [3])
async def test_gate_capacity(n: int) -> None:
    gate = PriorityGate(capacity=n, weights={"vip": 3, "normal": 1})
    assert [await gate.acquire("normal") for _ in range(n)] == [0.0] * n
    assert gate.active == n
