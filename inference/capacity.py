"""How busy each model is: the model server's slots and this process's recent service times.

For admission control (``inference.admission``): before a turn waits for a
model, ask whether the model can start within the tier's first-chunk budget.

The interface (stable; everything is typed and cheap):

- ``await capacity(role) -> Capacity``: the role's slots as its llama.cpp server reports
  them (``/slots``: busy/total; ``/metrics``: requests deferred in the server's own
  queue), cached for ``max_age_s`` (default 0.1 s, so a burst of turns costs one probe),
  plus ``ServiceTimes`` measured in this process and ``in_flight``, this process's own
  requests to the role. ``Capacity.estimated_start_ms()`` is the wait before a new
  request's first token, from those figures.
- ``capacity_sync(role)``: the same for threads and scripts (blocking).
- ``service_times(role) -> ServiceTimes``: recent first-token and total times (p50/p95
  over the last ``WINDOW`` requests), with no I/O at all.
- The backends call ``track(role)`` around each generation; nobody else needs to.

A role with no llama.cpp listener (a hosted API) has ``slots.reachable`` False and
``slots.total`` 0: only the service times and ``in_flight`` are known. A model server
that is down has ``reachable`` False and ``error`` set, which is itself a reason to
degrade at once instead of waiting for a connect timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import weakref
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
from django.conf import settings

from .registry import get_backend

WINDOW = 64  # requests per role the service times are taken over
PROBE_TIMEOUT_S = 0.25


@dataclass(frozen=True)
class SlotStatus:
    role: str
    url: str  # the llama.cpp listener's root ("" when the role has none)
    reachable: bool
    total: int  # decoding slots (continuous batching: this many replies at once)
    busy: int  # slots generating now
    deferred: int  # requests waiting inside llama.cpp for a slot
    fetched_at: float  # time.monotonic() of the probe
    error: str = ""

    @property
    def free(self) -> int:
        return max(0, self.total - self.busy)


@dataclass(frozen=True)
class ServiceTimes:
    role: str
    samples: int
    first_token_ms_p50: float | None
    first_token_ms_p95: float | None
    total_ms_p50: float | None
    total_ms_p95: float | None


@dataclass(frozen=True)
class Capacity:
    role: str
    slots: SlotStatus
    service: ServiceTimes
    in_flight: int  # this process's requests to the role now

    def estimated_start_ms(self) -> float | None:
        """Expected wait before a new request's first token, or None if unknown.

        A free slot: the recent first-token p50. Every slot busy: the requests ahead
        (``deferred`` + 1) each wait for a slot to free, about total p50 divided by
        the slots, then the first token.
        """
        first = self.service.first_token_ms_p50
        if first is None:
            return None
        if not self.slots.reachable or self.slots.total <= 0:
            return first
        if self.slots.free > 0 and self.slots.deferred == 0:
            return first
        per_slot = (self.service.total_ms_p50 or first) / self.slots.total
        return first + (self.slots.deferred + 1) * per_slot


# -- service times, measured by the backends ---------------------------------------------


@dataclass
class _Window:
    first: deque[float] = field(default_factory=lambda: deque(maxlen=WINDOW))
    total: deque[float] = field(default_factory=lambda: deque(maxlen=WINDOW))
    in_flight: int = 0


_windows: dict[str, _Window] = {}
_lock = threading.Lock()


def _window(role: str) -> _Window:
    with _lock:
        return _windows.setdefault(role, _Window())


class Tracker:
    """One generation: ``first()`` at its first token; the times are kept on exit."""

    def __init__(self, role: str) -> None:
        self.role = role
        self.started = time.perf_counter()
        self.first_ms: float | None = None

    def first(self) -> None:
        if self.first_ms is None:
            self.first_ms = (time.perf_counter() - self.started) * 1000


@contextlib.contextmanager
def track(role: str) -> Iterator[Tracker]:
    """Around one generation (the backends use it). Failed or abandoned requests
    count in ``in_flight`` while they run but leave no service time."""
    window = _window(role)
    tracker = Tracker(role)
    with _lock:
        window.in_flight += 1
    ok = False
    try:
        yield tracker
        ok = True
    finally:
        with _lock:
            window.in_flight -= 1
            if ok and tracker.first_ms is not None:
                window.first.append(tracker.first_ms)
                window.total.append((time.perf_counter() - tracker.started) * 1000)


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))], 1)


def service_times(role: str) -> ServiceTimes:
    window = _window(role)
    with _lock:
        first, total = list(window.first), list(window.total)
    return ServiceTimes(
        role=role,
        samples=len(first),
        first_token_ms_p50=_pct(first, 50),
        first_token_ms_p95=_pct(first, 95),
        total_ms_p50=_pct(total, 50),
        total_ms_p95=_pct(total, 95),
    )


def in_flight(role: str) -> int:
    return _window(role).in_flight


def service_reset() -> None:
    """Forget every window (tests)."""
    with _lock:
        _windows.clear()
        _cache.clear()


# -- the model server's slots ------------------------------------------------------------


def listener_url(role: str) -> str:
    """The llama.cpp listener serving ``role``: our model server, or the in-process
    engine's own listener once loaded; "" for a hosted API."""
    backend: Any = get_backend(role)
    if getattr(backend, "model_server", False):
        return str(backend.api_base).removesuffix("/v1")
    if getattr(backend, "loaded", False) and hasattr(backend, "listening_address"):
        return str(backend.listening_address)
    return ""


def _parse(role: str, url: str, slots: Any, metrics: str) -> SlotStatus:
    busy = sum(1 for slot in slots if isinstance(slot, dict) and slot.get("is_processing"))
    deferred = 0
    for line in metrics.splitlines():
        if line.startswith("llamacpp:requests_deferred "):
            deferred = int(float(line.split()[1]))
    return SlotStatus(role, url, True, len(slots), busy, deferred, time.monotonic())


def _down(role: str, url: str, error: str) -> SlotStatus:
    return SlotStatus(role, url, False, 0, 0, 0, time.monotonic(), error)


def _auth() -> dict[str, str]:
    """Our model server's key, when it has one (its /slots and /metrics ask for it)."""
    key = settings.TIERDESK_MODEL_SERVER_API_KEY
    return {"Authorization": f"Bearer {key}"} if key else {}


def probe_sync(role: str, url: str, timeout_s: float = PROBE_TIMEOUT_S) -> SlotStatus:
    if not url:
        return _down(role, url, "no llama.cpp listener")
    try:
        with httpx.Client(
            base_url=url, timeout=timeout_s, trust_env=False, headers=_auth()
        ) as client:
            slots = client.get("/slots")
            slots.raise_for_status()
            metrics = client.get("/metrics")
            return _parse(role, url, slots.json(), metrics.text if metrics.is_success else "")
    except (httpx.HTTPError, ValueError) as exc:
        return _down(role, url, f"{type(exc).__name__}: {exc}")


_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
    weakref.WeakKeyDictionary()
)


async def probe(role: str, url: str, timeout_s: float = PROBE_TIMEOUT_S) -> SlotStatus:
    """Ask the listener now (two small GETs on a kept-alive connection, ~1-2 ms)."""
    if not url:
        return _down(role, url, "no llama.cpp listener")
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None or client.is_closed:
        client = httpx.AsyncClient(timeout=timeout_s, trust_env=False)
        _clients[loop] = client
    try:
        slots, metrics = await asyncio.gather(
            client.get(url + "/slots", headers=_auth()),
            client.get(url + "/metrics", headers=_auth()),
        )
        slots.raise_for_status()
        return _parse(role, url, slots.json(), metrics.text if metrics.is_success else "")
    except (httpx.HTTPError, ValueError) as exc:
        return _down(role, url, f"{type(exc).__name__}: {exc}")


_cache: dict[str, SlotStatus] = {}


async def capacity(role: str, *, max_age_s: float = 0.1) -> Capacity:
    """The role's slots (probed at most every ``max_age_s``), service times, in-flight."""
    cached = _cache.get(role)
    if cached is None or time.monotonic() - cached.fetched_at > max_age_s:
        cached = _cache[role] = await probe(role, listener_url(role))
    return Capacity(role, cached, service_times(role), in_flight(role))


def capacity_sync(role: str, *, max_age_s: float = 0.1) -> Capacity:
    cached = _cache.get(role)
    if cached is None or time.monotonic() - cached.fetched_at > max_age_s:
        cached = _cache[role] = probe_sync(role, listener_url(role))
    return Capacity(role, cached, service_times(role), in_flight(role))
