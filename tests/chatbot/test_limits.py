"""Rate limits in front of every turn (no models)."""

from __future__ import annotations

from typing import Any

import pytest

from chatbot.limits import DynamicWindow, RateLimiter, TokenBucket
from inference import state
from tests.net import free_port

pytestmark = pytest.mark.usefixtures("isolated_state")


def test_token_bucket_burst_then_rate() -> None:
    bucket = TokenBucket(rate=120, burst=300)
    now = 1000.0
    allowed = sum(bucket.take_local(now).allowed for _ in range(400))
    assert allowed == 300  # the burst
    refused = bucket.take_local(now)
    assert not refused.allowed and 0 < refused.retry_after <= 1 / 120 + 1e-9
    # One second later, 120 more.
    assert sum(bucket.take_local(now + 1).allowed for _ in range(200)) == 120


async def test_token_bucket_in_redis_is_shared(settings: Any) -> None:
    settings.TIERDESK_STATE_REDIS_URL = "redis://127.0.0.1:6379/1"
    state.reset()
    one, two = TokenBucket(rate=1, burst=3), TokenBucket(rate=1, burst=3)
    results = [(await b.take()).allowed for b in (one, two, one, two)]
    assert results == [True, True, True, False]  # one bucket for both processes
    refused = await one.take()
    assert refused.limit == "global" and 0 < refused.retry_after <= 1


def test_dynamic_window_widens_under_sustained_load_and_narrows_after() -> None:
    window = DynamicWindow(minimum=50, maximum=200)
    t = 10_000.0
    limits = []
    for second in range(24):  # 300 messages a second, sustained
        admitted = sum(window.admit(t + second + i / 400).allowed for i in range(300))
        limits.append(window.limit)
        assert admitted <= 200
    assert limits[0] == 50 and max(limits) == 200  # widened step by step to the max
    assert limits == sorted(limits)
    for second in range(24, 64):  # then a trickle: it narrows back towards the minimum
        window.admit(t + second)
    assert window.limit < 100
    refused = DynamicWindow(minimum=1, maximum=1)
    refused.admit(t)
    verdict = refused.admit(t + 0.25)
    assert not verdict.allowed and verdict.limit == "window" and verdict.retry_after == 0.75


async def test_per_session_and_per_ip_limits(settings: Any) -> None:
    settings.TIERDESK_RATE_PER_SESSION = "3/minute"
    settings.TIERDESK_RATE_PER_IP = "5/minute"
    limiter = RateLimiter.from_settings()
    got = [(await limiter.check(session="s1", ip="10.0.0.1")) for _ in range(4)]
    assert [v.allowed for v in got] == [True, True, True, False]
    assert got[-1].limit == "session" and 0 < got[-1].retry_after <= 60
    more = [(await limiter.check(session="s2", ip="10.0.0.1")) for _ in range(3)]
    assert [v.allowed for v in more] == [True, True, False] and more[-1].limit == "ip"
    assert (await limiter.check(session="s3", ip="10.0.0.2")).allowed


async def test_limits_fail_open_when_redis_is_unreachable(settings: Any) -> None:

    settings.TIERDESK_STATE_REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    settings.TIERDESK_RATE_PER_SESSION = "1/minute"
    state.reset()
    limiter = RateLimiter.from_settings()
    assert all([(await limiter.check(session="s", ip="1.2.3.4")).allowed for _ in range(3)])
