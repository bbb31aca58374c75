"""The upstream circuit breaker, shared by every server process (after Sentry's
``circuit_breaker2``).

States (docs/resilience.md has the diagram and the defaults):

- ``closed``: requests go to the upstream. Each upstream failure that counts (429,
  5xx, timeouts, an unreachable or dropped server) is recorded with its time; when
  ``error_limit`` of them fall within ``error_window_s`` the breaker opens.
- ``open``: for ``open_s`` nobody calls the upstream; the fallback answers at once.
- ``half_open``: after ``open_s`` exactly one request (the trial) goes to the
  upstream; everyone else still gets the fallback. A trial that succeeds closes the
  breaker and forgets the errors; one that fails opens it for another ``open_s``. A
  trial that never reports back (its process died) frees the trial slot after
  ``trial_timeout_s``.

The state lives in Redis when ``TIERDESK_STATE_REDIS_URL`` is set (every process
agrees; each transition is one Lua script, so concurrent processes can't race), and in
this process's memory otherwise. If Redis can't be reached the breaker lets traffic
through: it must never be the outage.
"""

from __future__ import annotations

import contextlib
import enum
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field

from django.conf import settings

from . import state


class BreakerState(enum.StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


@dataclass(frozen=True)
class BreakerConfig:
    # Failures within the window that open the breaker.
    error_limit: int = 5
    error_window_s: float = 30.0
    # How long it stays open before one trial request is let through.
    open_s: float = 30.0
    # A trial whose process never reports back frees the slot after this.
    trial_timeout_s: float = 30.0

    @classmethod
    def from_settings(cls) -> BreakerConfig:
        return cls(
            error_limit=settings.TIERDESK_BREAKER_ERROR_LIMIT,
            error_window_s=settings.TIERDESK_BREAKER_ERROR_WINDOW_S,
            open_s=settings.TIERDESK_BREAKER_OPEN_S,
            trial_timeout_s=settings.TIERDESK_BREAKER_TRIAL_TIMEOUT_S,
        )


@dataclass(frozen=True)
class Permit:
    allowed: bool
    state: BreakerState
    trial: bool = False
    # True when Redis was unreachable and the breaker let the request through blind.
    degraded: bool = False


# KEYS: open_until, trial. ARGV: now, trial_ttl_ms.
# Returns 0 closed, 1 open, 2 half-open and this caller holds the trial, 3 half-open busy.
_ALLOW = """
local until_ = redis.call('GET', KEYS[1])
if not until_ then return 0 end
if tonumber(ARGV[1]) < tonumber(until_) then return 1 end
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return 2 end
return 3
"""

# KEYS: errors, open_until, trial. ARGV: now, window_s, limit, open_s, is_trial, member,
# state_ttl_ms. Returns 1 when this failure opened the breaker.
_FAILURE = """
local now = tonumber(ARGV[1])
if ARGV[5] == '1' then
  redis.call('SET', KEYS[2], now + tonumber(ARGV[4]), 'PX', ARGV[7])
  redis.call('DEL', KEYS[3])
  return 1
end
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('ZADD', KEYS[1], now, ARGV[6])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
redis.call('PEXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2]) * 1000))
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  redis.call('SET', KEYS[2], now + tonumber(ARGV[4]), 'PX', ARGV[7])
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
"""

# KEYS: errors, open_until, trial. Closes the breaker after a successful trial.
_SUCCESS = """
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
return 1
"""

_STATE = {0: BreakerState.CLOSED, 1: BreakerState.OPEN, 2: BreakerState.HALF_OPEN}


@dataclass
class _Local:
    errors: deque[float] = field(default_factory=deque)
    open_until: float | None = None
    trial_until: float = 0.0


class CircuitBreaker:
    def __init__(self, name: str, config: BreakerConfig | None = None) -> None:
        self.name = name
        self.config = config or BreakerConfig.from_settings()
        self.keys = tuple(state.key("breaker", name, part) for part in ("errors", "open", "trial"))
        self._local = _Local()
        self._lock = threading.Lock()

    @property
    def _state_ttl_ms(self) -> int:
        # The open mark outlives open_s (the half-open phase needs it) but not forever:
        # a breaker nobody touches for ten open periods closes by itself.
        return int(self.config.open_s * 10 * 1000) + 60_000

    # -- the three calls ------------------------------------------------------------------
    async def allow(self) -> Permit:
        now = time.time()
        if not state.shared():
            return self._local_allow(now)
        try:
            code = await state.run(
                lambda r: r.eval(
                    _ALLOW,
                    2,
                    self.keys[1],
                    self.keys[2],
                    now,
                    int(self.config.trial_timeout_s * 1000),
                )
            )
        except state.RedisUnavailable:
            return Permit(True, BreakerState.CLOSED, degraded=True)
        code = int(code)
        if code == 0:
            return Permit(True, BreakerState.CLOSED)
        if code == 2:
            return Permit(True, BreakerState.HALF_OPEN, trial=True)
        return Permit(False, BreakerState.OPEN if code == 1 else BreakerState.HALF_OPEN)

    async def record_success(self, permit: Permit) -> None:
        if not permit.trial:
            return
        if not state.shared():
            with self._lock:
                self._local = _Local()
            return
        with contextlib.suppress(state.RedisUnavailable):
            await state.run(lambda r: r.eval(_SUCCESS, 3, *self.keys))

    async def record_failure(self, permit: Permit) -> bool:
        """Count one upstream failure; True if it opened the breaker."""
        now = time.time()
        if not state.shared():
            return self._local_failure(now, permit.trial)
        try:
            opened = await state.run(
                lambda r: r.eval(
                    _FAILURE,
                    3,
                    *self.keys,
                    now,
                    self.config.error_window_s,
                    self.config.error_limit,
                    self.config.open_s,
                    "1" if permit.trial else "0",
                    f"{now}:{uuid.uuid4().hex[:8]}",
                    self._state_ttl_ms,
                )
            )
        except state.RedisUnavailable:
            return False
        return bool(int(opened))

    async def current(self) -> BreakerState:
        """The state as an observer sees it (no trial slot is taken)."""
        now = time.time()
        if not state.shared():
            with self._lock:
                until = self._local.open_until
        else:
            try:
                raw = await state.run(lambda r: r.get(self.keys[1]))
            except state.RedisUnavailable:
                return BreakerState.CLOSED
            until = float(raw) if raw is not None else None
        if until is None:
            return BreakerState.CLOSED
        return BreakerState.OPEN if now < until else BreakerState.HALF_OPEN

    async def reset(self) -> None:
        with self._lock:
            self._local = _Local()
        if state.shared():
            with contextlib.suppress(state.RedisUnavailable):
                await state.run(lambda r: r.delete(*self.keys))

    # -- the in-process store (embedded default) -------------------------------------------
    def _local_allow(self, now: float) -> Permit:
        with self._lock:
            local = self._local
            if local.open_until is None:
                return Permit(True, BreakerState.CLOSED)
            if now < local.open_until:
                return Permit(False, BreakerState.OPEN)
            if now >= local.trial_until:
                local.trial_until = now + self.config.trial_timeout_s
                return Permit(True, BreakerState.HALF_OPEN, trial=True)
            return Permit(False, BreakerState.HALF_OPEN)

    def _local_failure(self, now: float, trial: bool) -> bool:
        cfg = self.config
        with self._lock:
            local = self._local
            if trial:
                local.open_until = now + cfg.open_s
                local.trial_until = 0.0
                return True
            if local.open_until is not None:
                return False
            local.errors.append(now)
            while local.errors and local.errors[0] <= now - cfg.error_window_s:
                local.errors.popleft()
            if len(local.errors) >= cfg.error_limit:
                local.open_until = now + cfg.open_s
                local.errors.clear()
                return True
            return False


_breakers: dict[str, CircuitBreaker] = {}
_breakers_lock = threading.Lock()


def breaker_for(name: str) -> CircuitBreaker:
    """One breaker object per upstream name per process (the state may be shared)."""
    with _breakers_lock:
        if name not in _breakers:
            _breakers[name] = CircuitBreaker(name)
        return _breakers[name]


def breakers_reset() -> None:
    with _breakers_lock:
        _breakers.clear()
