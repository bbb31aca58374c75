"""Rate limits in front of every turn (the priority queue in front of model work is
``inference.queue``).

Checked in this order for each stored shopper message (the message is stored and
acked first, whatever the verdict: docs/protocol.md, ``rate_limited``):

1. per session and 2. per IP: moving windows from the ``limits`` package (it fits:
   exact moving windows on Redis or in memory, and it reports when a slot frees up);
3. the global token bucket (120/s, burst 300), shared by every process through one
   Lua script in Redis, or in this process for the embedded default;
4. the dynamic window: at most ``w`` messages per second per process, where ``w``
   starts at ``min`` (50/s), widens by a quarter after every 3 saturated seconds in a
   row (sustained load) up to ``max`` (200/s), and narrows back by a tenth for every
   second that uses less than half of it.

Every shared check fails open: if Redis is unreachable the message goes through.

The global bucket and the dynamic window limit load, not a shopper: a message over them
waits its turn (``load_admit``, polled by the consumer, at most
``TIERDESK_LOAD_WAIT_MAX_S``) and the widget shows "busy, you are n-th"; only the
per-session and per-IP limits answer ``rate_limited``.

``WaitingRoom``: at most ``TIERDESK_WS_ACTIVE_MAX`` connections per process are served;
a shopper beyond that is accepted (never a refused handshake), told their place in
line, and served in arrival order as others leave (docs/protocol.md, ``busy``).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from inference import state


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    limit: str = ""
    retry_after: float = 0.0

    @property
    def retry_after_s(self) -> int:
        return max(1, math.ceil(self.retry_after))


OK = Verdict(True)

# -- the global token bucket --------------------------------------------------------------

# KEYS: bucket. ARGV: now, rate, burst. Returns {allowed, retry_after_ms}.
_BUCKET = """
local rate = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local now = tonumber(ARGV[1])
local data = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(data[1]) or burst
local ts = tonumber(data[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - ts) * rate)
local allowed = 0
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
else
  wait = math.ceil((1 - tokens) / rate * 1000)
end
redis.call('HSET', KEYS[1], 'tokens', tokens, 'ts', now)
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return {allowed, wait}
"""


@dataclass
class TokenBucket:
    rate: float
    burst: float
    tokens: float = -1.0
    updated: float = 0.0

    def take_local(self, now: float) -> Verdict:
        if self.tokens < 0:
            self.tokens, self.updated = self.burst, now
        self.tokens = min(self.burst, self.tokens + max(0.0, now - self.updated) * self.rate)
        self.updated = now
        if self.tokens >= 1:
            self.tokens -= 1
            return OK
        return Verdict(False, "global", (1 - self.tokens) / self.rate)

    async def take(self) -> Verdict:
        now = time.time()
        if not state.shared():
            return self.take_local(now)
        try:
            allowed, wait_ms = await state.run(
                lambda r: r.eval(_BUCKET, 1, state.key("bucket"), now, self.rate, self.burst)
            )
        except state.RedisUnavailable:
            return OK
        return OK if int(allowed) else Verdict(False, "global", int(wait_ms) / 1000)


# -- the dynamic window --------------------------------------------------------------------


@dataclass
class DynamicWindow:
    minimum: float
    maximum: float
    limit: float = 0.0
    second: int = -1
    count: int = 0
    saturated_seconds: int = 0
    SUSTAINED_S = 3
    WIDEN = 1.25
    NARROW = 0.9

    def __post_init__(self) -> None:
        self.limit = self.limit or self.minimum

    def _roll(self, second: int) -> None:
        if self.second < 0:
            self.second = second
            return
        while self.second < second:
            # Close the finished second, then any idle seconds after it.
            if self.count >= self.limit * 0.9:
                self.saturated_seconds += 1
                if self.saturated_seconds >= self.SUSTAINED_S:
                    self.limit = min(self.maximum, self.limit * self.WIDEN)
                    self.saturated_seconds = 0
            else:
                self.saturated_seconds = 0
                if self.count < self.limit * 0.5:
                    self.limit = max(self.minimum, self.limit * self.NARROW)
            self.count = 0
            self.second += 1
            if second - self.second > 60:  # long idle: jump, narrowing to the minimum
                self.second, self.limit = second, self.minimum

    def admit(self, now: float) -> Verdict:
        second = int(now)
        self._roll(second)
        if self.count < self.limit:
            self.count += 1
            return OK
        # Counted as demand so sustained overload widens the window.
        self.count += 1
        return Verdict(False, "window", second + 1 - now)


# -- per session and per IP (the ``limits`` package) ------------------------------------


class _KeyedLimits:
    def __init__(self) -> None:
        from limits import parse
        from limits.aio.strategies import MovingWindowRateLimiter

        self.per_session = parse(settings.TIERDESK_RATE_PER_SESSION)
        self.per_ip = parse(settings.TIERDESK_RATE_PER_IP)
        self._limiters: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any]
        self._limiters = weakref.WeakKeyDictionary()
        self._cls = MovingWindowRateLimiter

    def _limiter(self) -> Any:
        loop = asyncio.get_running_loop()
        limiter = self._limiters.get(loop)
        if limiter is None:
            if state.shared():
                from limits.aio.storage import RedisStorage

                timeout = float(settings.TIERDESK_STATE_REDIS_TIMEOUT_S)
                storage: Any = RedisStorage(
                    "async+" + state.redis_url(),
                    implementation="redispy",
                    key_prefix=state.key("limits"),
                    socket_timeout=timeout,
                    socket_connect_timeout=timeout,
                )
            else:
                from limits.aio.storage import MemoryStorage

                storage = MemoryStorage()
            limiter = self._cls(storage)
            self._limiters[loop] = limiter
        return limiter

    async def hit(self, kind: str, identifier: str) -> Verdict:
        item = self.per_session if kind == "session" else self.per_ip
        if state.shared():
            try:
                state.aredis()  # raises while Redis is known to be down: fail open
            except state.RedisUnavailable:
                return OK
        limiter = self._limiter()
        try:
            if await limiter.hit(item, kind, identifier):
                return OK
            stats = await limiter.get_window_stats(item, kind, identifier)
        except Exception as exc:  # Redis down or slow: never block shoppers on it
            state.mark_down(exc)
            return OK
        return Verdict(False, kind, max(0.0, stats.reset_time - time.time()))


@dataclass
class RateLimiter:
    bucket: TokenBucket
    window: DynamicWindow
    keyed: _KeyedLimits = field(default_factory=_KeyedLimits)

    @classmethod
    def from_settings(cls) -> RateLimiter:
        return cls(
            bucket=TokenBucket(settings.TIERDESK_RATE_BUCKET_PER_S, settings.TIERDESK_RATE_BURST),
            window=DynamicWindow(
                settings.TIERDESK_RATE_WINDOW_MIN_PER_S, settings.TIERDESK_RATE_WINDOW_MAX_PER_S
            ),
        )

    async def check_load(self) -> Verdict:
        """The global bucket and the dynamic window only (a message waiting its turn)."""
        if not settings.TIERDESK_RATE_LIMITS:
            return OK
        verdict = await self.bucket.take()
        if verdict.allowed:
            verdict = self.window.admit(time.time())
        return verdict

    async def check(self, *, session: str, ip: str | None) -> Verdict:
        if not settings.TIERDESK_RATE_LIMITS:
            return OK
        verdict = await self.keyed.hit("session", session)
        if verdict.allowed and ip:
            verdict = await self.keyed.hit("ip", ip)
        if verdict.allowed:
            verdict = await self.bucket.take()
        if verdict.allowed:
            verdict = self.window.admit(time.time())
        return verdict


_limiter: RateLimiter | None = None


def rate_limiter() -> RateLimiter:
    global _limiter
    if _limiter is None:
        _limiter = RateLimiter.from_settings()
    return _limiter


async def message_admit(*, session: str, ip: str | None) -> Verdict:
    """Whether a stored message may be answered now (the consumer's hook)."""
    return await rate_limiter().check(session=session, ip=ip)


# The limits that measure load, not a shopper: over them a message waits its turn.
LOAD_LIMITS = frozenset({"global", "window"})


async def load_admit() -> Verdict:
    """Whether a message held back by a load limit may be answered now."""
    return await rate_limiter().check_load()


# -- the waiting room ---------------------------------------------------------------------


Notify = Callable[[int], Awaitable[None]]


class WaitingRoom:
    """Connections served by this process: ``capacity`` at once, the rest in line.

    ``enter`` returns a future that is done once the connection is served; each one
    in line is told its place through ``notify(position)`` whenever the line moves,
    and ``notify(0)`` when its turn comes."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.active = 0
        self.line: list[tuple[asyncio.Future[None], Notify]] = []

    @property
    def waiting(self) -> int:
        return len(self.line)

    async def enter(self, notify: Notify) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self.capacity <= 0 or (self.active < self.capacity and not self.line):
            self.active += 1
            future.set_result(None)
            return future
        self.line.append((future, notify))
        await self._tell(notify, len(self.line))
        return future

    async def leave(self, future: asyncio.Future[None]) -> None:
        """The connection closed: free its place (served or in line)."""
        if not future.done() or future.cancelled():
            self.line = [(f, n) for f, n in self.line if f is not future]
            future.cancel()
        else:
            self.active -= 1
            if self.line:
                nxt, notify = self.line.pop(0)
                self.active += 1
                nxt.set_result(None)
                await self._tell(notify, 0)
        for place, (_f, notify) in enumerate(list(self.line), start=1):
            await self._tell(notify, place)

    @staticmethod
    async def _tell(notify: Notify, position: int) -> None:
        with contextlib.suppress(Exception):  # a connection closing meanwhile
            await notify(position)


_rooms: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, WaitingRoom] = (
    weakref.WeakKeyDictionary()
)


def waiting_room() -> WaitingRoom:
    """This process's waiting room (one per event loop: tests run several)."""
    loop = asyncio.get_running_loop()
    room = _rooms.get(loop)
    if room is None:
        room = _rooms[loop] = WaitingRoom(settings.TIERDESK_WS_ACTIVE_MAX)
    return room


def limits_reset() -> None:
    global _limiter
    _limiter = None
    _rooms.clear()
