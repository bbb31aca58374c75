"""Breaker states and transitions, in both stores, and shared between "processes"
(two breaker objects share nothing but Redis). No models: fast."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from inference import state
from inference.breaker import BreakerConfig, BreakerState, CircuitBreaker
from tests.net import free_port

CFG = BreakerConfig(error_limit=3, error_window_s=5, open_s=0.3, trial_timeout_s=0.5)

pytestmark = pytest.mark.usefixtures("isolated_state")


@pytest.fixture(params=["local", "redis"])
def store(request: Any, settings: Any) -> str:
    if request.param == "local":
        settings.TIERDESK_STATE_REDIS_URL = ""
    else:
        settings.TIERDESK_STATE_REDIS_URL = "redis://127.0.0.1:6379/1"
    state.reset()
    return str(request.param)


async def test_closed_open_half_open_closed(store: str) -> None:
    breaker = CircuitBreaker("t", CFG)
    permit = await breaker.allow()
    assert permit.allowed and permit.state == BreakerState.CLOSED
    assert not await breaker.record_failure(permit)
    assert not await breaker.record_failure(permit)
    assert await breaker.record_failure(permit)  # the third error in the window opens it
    refused = await breaker.allow()
    assert not refused.allowed and refused.state == BreakerState.OPEN
    await asyncio.sleep(0.35)
    trial = await breaker.allow()
    assert trial.allowed and trial.trial and trial.state == BreakerState.HALF_OPEN
    # Only one trial at a time; the others still get the fallback.
    other = await breaker.allow()
    assert not other.allowed and other.state == BreakerState.HALF_OPEN
    await breaker.record_failure(trial)  # a failed trial opens it again
    assert (await breaker.allow()).state == BreakerState.OPEN
    await asyncio.sleep(0.35)
    trial = await breaker.allow()
    assert trial.trial
    await breaker.record_success(trial)
    assert await breaker.current() == BreakerState.CLOSED
    assert (await breaker.allow()).state == BreakerState.CLOSED
    await breaker.reset()


async def test_errors_outside_the_window_do_not_add_up(store: str) -> None:
    breaker = CircuitBreaker("w", BreakerConfig(error_limit=2, error_window_s=0.2, open_s=5))
    permit = await breaker.allow()
    await breaker.record_failure(permit)
    await asyncio.sleep(0.25)
    assert not await breaker.record_failure(permit)
    assert await breaker.current() == BreakerState.CLOSED
    await breaker.reset()


async def test_a_lost_trial_frees_its_slot_after_the_trial_timeout(store: str) -> None:
    breaker = CircuitBreaker("lost", CFG)
    permit = await breaker.allow()
    for _ in range(3):
        await breaker.record_failure(permit)
    await asyncio.sleep(0.35)
    assert (await breaker.allow()).trial  # ...and its process dies without reporting
    assert not (await breaker.allow()).allowed
    await asyncio.sleep(0.55)
    assert (await breaker.allow()).trial
    await breaker.reset()


async def test_state_is_shared_through_redis(settings: Any) -> None:
    settings.TIERDESK_STATE_REDIS_URL = "redis://127.0.0.1:6379/1"
    state.reset()
    one, two = CircuitBreaker("shared", CFG), CircuitBreaker("shared", CFG)
    permit = await one.allow()
    for _ in range(3):
        await one.record_failure(permit)
    assert not (await two.allow()).allowed  # the other process sees it open
    await one.reset()
    assert (await two.allow()).allowed


async def test_unreachable_redis_fails_open(settings: Any) -> None:

    settings.TIERDESK_STATE_REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    state.reset()
    breaker = CircuitBreaker("gone", CFG)
    permit = await breaker.allow()
    assert permit.allowed and permit.degraded
    assert not await breaker.record_failure(permit)
    assert (await breaker.allow()).allowed
