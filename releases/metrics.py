"""Per-minute aggregates per release, variant and tier, and what they add up to.

Written when a reply finishes (``reply_record``) and when a shopper rates
(``rating_record``), into ``MetricMinute`` rows keyed by the minute of the release
clock. First-chunk latency goes into a histogram with fixed log-spaced bounds, so any
window's p50/p95 is read from merged minutes (within one bucket, i.e. about 5%).
"""

from __future__ import annotations

import atexit
import bisect
import logging
import math
import os
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import (
    DatabaseError,
    IntegrityError,
    InterfaceError,
    OperationalError,
    close_old_connections,
    connections,
    transaction,
)

from routing.types import HANDOFF as HANDOFF_INTENT

from . import clock
from .models import MetricMinute

logger = logging.getLogger(__name__)


@dataclass
class Observers:
    """Who else counts every reply and rating as it is recorded (Prometheus: the app
    registers ``releases.prom`` at start), so this module imports none of them."""

    reply: list[Callable[..., None]] = field(default_factory=list)
    rating: list[Callable[..., None]] = field(default_factory=list)


OBSERVERS = Observers()

# Upper bounds (ms) of the latency buckets: 1 ms .. ~60 s, 10% apart; one overflow bucket.
LATENCY_BOUNDS_MS: tuple[float, ...] = tuple(
    round(1.1**i, 3) for i in range(int(math.log(60_000) / math.log(1.1)) + 2)
)
HIST_SIZE = len(LATENCY_BOUNDS_MS) + 1

# Fallback reasons that are a policy choice, not a failure of the model.
_NOT_ERRORS = {"timeout", "breaker_open", "session_budget", "prompt_too_long"}
_CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")


def handoff_requested(*, intent: str, route_reason: dict[str, Any] | None) -> bool:
    """A routed turn that ended in the ``handoff`` intent, from the stored reply row:
    the shopper asked for a person (the router's handoff recogniser: its rule or
    scorer, EN and ZH) or the bot offered one because it was stuck. Counted, per tier and
    variant, as a handoff request: a release that makes shoppers give up on the bot
    shows up here first. The answer to the offer ("yes" queues, "no") has no route
    reason (the dialogue continued, nothing was routed), so one request counts once;
    a message that merely mentions "agent" or "人工" is not one unless it was routed so.
    """
    return intent == HANDOFF_INTENT and bool(route_reason)


def estimate_tokens(text: str) -> int:
    """Rough token count: one per CJK character, one per 4 other characters."""
    cjk = len(_CJK.findall(text or ""))
    return cjk + math.ceil((len(text or "") - cjk) / 4)


def price_of(model: str) -> tuple[float, float]:
    """(prompt, completion) USD per million tokens; unknown models cost the default."""
    prices: dict[str, Any] = settings.TIERDESK_MODEL_PRICES
    value = prices.get(model) or prices.get("*") or (0.0, 0.0)
    return float(value[0]), float(value[1])


def cost_of(model: str, prompt_tokens: int, completion_tokens: int) -> float:
    p, c = price_of(model)
    return (prompt_tokens * p + completion_tokens * c) / 1_000_000


def is_error(status: str, metadata: dict[str, Any]) -> bool:
    """A reply that failed, or whose model failed (a template then covered for it)."""
    if status == "error":
        return True
    reason = str((metadata.get("fallback") or {}).get("reason") or "")
    return bool(reason) and reason not in _NOT_ERRORS


# --- histogram -----------------------------------------------------------------------------


def hist_add(hist: list[int], value_ms: float) -> list[int]:
    if len(hist) != HIST_SIZE:
        hist = [0] * HIST_SIZE
    hist[bisect.bisect_left(LATENCY_BOUNDS_MS, value_ms)] += 1
    return hist


def hist_merge(hists: Iterable[list[int]]) -> list[int]:
    total = [0] * HIST_SIZE
    for hist in hists:
        if len(hist) == HIST_SIZE:
            for i, n in enumerate(hist):
                total[i] += n
    return total


def _bounds(i: int) -> tuple[float, float]:
    low = LATENCY_BOUNDS_MS[i - 1] if i > 0 else 0.0
    high = LATENCY_BOUNDS_MS[i] if i < len(LATENCY_BOUNDS_MS) else LATENCY_BOUNDS_MS[-1] * 1.1
    return low, high


def hist_quantile(hist: list[int], q: float) -> float | None:
    """The q-quantile (ms), linearly interpolated inside its bucket."""
    n = sum(hist)
    if n == 0:
        return None
    rank = q * n
    seen = 0
    for i, count in enumerate(hist):
        if count and seen + count >= rank:
            low, high = _bounds(i)
            return low + (high - low) * max(0.0, rank - seen) / count
        seen += count
    return _bounds(len(hist) - 1)[1]


def hist_above(hist: list[int], threshold_ms: float) -> float:
    """How many values exceed ``threshold_ms`` (interpolated inside its bucket)."""
    above = 0.0
    for i, count in enumerate(hist):
        if not count:
            continue
        low, high = _bounds(i)
        if low >= threshold_ms:
            above += count
        elif high > threshold_ms:
            above += count * (high - threshold_ms) / (high - low)
    return above


# --- recording -----------------------------------------------------------------------------


def _minute_update(
    *, minute: datetime, release_id: int | None, variant: str, tier: str, apply: Callable[..., None]
) -> None:
    key = {"minute": minute, "release_id": release_id, "variant": variant, "tier": tier or "none"}
    with transaction.atomic():
        row = MetricMinute.objects.select_for_update().filter(**key).first()
        if row is None:
            try:
                with transaction.atomic():
                    row = MetricMinute.objects.create(**key, latency_hist=[0] * HIST_SIZE)
            except IntegrityError:  # another process created it first
                row = MetricMinute.objects.select_for_update().get(**key)
        apply(row)
        row.save()


@dataclass(frozen=True)
class ReplyFacts:
    release_id: int | None
    variant: str
    tier: str
    status: str
    model: str
    first_chunk_ms: float | None
    prompt_tokens: int
    completion_tokens: int
    question: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    # The reply row's intent and route reason (what the router decided for the turn).
    intent: str = ""
    route_reason: dict[str, Any] = field(default_factory=dict)


@dataclass
class ReplyCounts:
    """What replies add to a minute row: one reply's, or several summed (the buffer)."""

    replies: int = 0
    errors: int = 0
    fallbacks: int = 0
    handoffs: int = 0
    model_turns: int = 0
    degraded: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    baseline_cost: float = 0.0
    latency_count: int = 0
    latency_sum_ms: float = 0.0
    hist: list[int] = field(default_factory=lambda: [0] * HIST_SIZE)

    def merge(self, other: ReplyCounts) -> None:
        _sum_into(self, other, (*REPLY_SUMS, "latency_count", "latency_sum_ms"))
        self.hist = hist_merge([self.hist, other.hist])

    def apply(self, row: MetricMinute) -> None:
        _sum_into(row, self, REPLY_SUMS)
        if self.latency_count:
            _sum_into(row, self, ("latency_count", "latency_sum_ms"))
            row.latency_hist = hist_merge([list(row.latency_hist or []), self.hist])


# The counts a reply adds, summed alike in the buffer, the minute row and a window.
REPLY_SUMS = (
    "replies",
    "errors",
    "fallbacks",
    "handoffs",
    "model_turns",
    "degraded",
    "prompt_tokens",
    "completion_tokens",
    "cost",
    "baseline_cost",
)


def _sum_into(target: Any, source: Any, names: Iterable[str]) -> None:
    for name in names:
        setattr(target, name, getattr(target, name) + getattr(source, name))


# (minute, release id, variant, tier): one MetricMinute row.
MinuteKey = tuple[datetime, int | None, str, str]


class ReplyBuffer:
    """Reply counts of this process not yet in their minute rows, flushed every
    ``TIERDESK_METRICS_FLUSH_S`` by a thread of its own.

    Written per reply, the minute row was a locked read-modify-write that every reply of
    the same tier and minute queued for, in every process: at 200 sessions 31% of the
    chat's database threads' samples. Buffered, a reply costs a dict update, and each
    interval writes each (minute, release, variant, tier) once. Replies keep their own
    minute, so a late flush still counts them where they belong.

    What can be lost: a process killed with SIGKILL (or a power cut) loses the counts of
    its last interval; a normal exit (SIGTERM, SIGINT) flushes them at exit. A flush
    that fails because the database is unreachable keeps its counts for the next one;
    one that fails on the data itself (its release was deleted) is logged and dropped.
    The window reads (guardrails, console, Prometheus) see a reply up to one interval
    late; the guardrails compare minutes and tick every TIERDESK_RELEASE_TICK_S (60 s).
    """

    def __init__(self, *, thread: bool = True) -> None:
        self._lock = threading.Lock()
        self._pending: dict[MinuteKey, ReplyCounts] = {}
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        # Without a thread only ``flush`` writes (tests).
        self._threaded = thread

    def add(self, key: MinuteKey, counts: ReplyCounts) -> None:
        with self._lock:
            self._merge(key, counts)
            if self._thread is None and self._threaded:
                self._thread = threading.Thread(target=self._run, name="metrics-flush", daemon=True)
                self._thread.start()

    def pending(self) -> int:
        """Replies counted here and not yet written."""
        with self._lock:
            return sum(c.replies for c in self._pending.values())

    def flush(self) -> int:
        """Write what is pending, one transaction per minute row; returns the replies
        written."""
        with self._lock:
            batch, self._pending = list(self._pending.items()), {}
        written = 0
        for i, (key, counts) in enumerate(batch):
            minute, release_id, variant, tier = key
            try:
                _minute_update(
                    minute=minute,
                    release_id=release_id,
                    variant=variant,
                    tier=tier,
                    apply=counts.apply,
                )
            except (OperationalError, InterfaceError):
                # The database is away: keep this row's counts and the rest for the next
                # flush (a row whose transaction failed was not written).
                logger.warning("release metrics not flushed, kept for the next try", exc_info=True)
                with self._lock:
                    for key_left, left in batch[i:]:
                        self._merge(key_left, left)
                break
            except DatabaseError:
                logger.exception("release metrics of %s dropped (%s replies)", key, counts.replies)
            else:
                written += counts.replies
        return written

    def _merge(self, key: MinuteKey, counts: ReplyCounts) -> None:
        pending = self._pending.get(key)
        if pending is None:
            self._pending[key] = counts
        else:
            pending.merge(counts)

    def _run(self) -> None:
        while not self._stop.wait(max(0.1, settings.TIERDESK_METRICS_FLUSH_S)):
            # A thread that lives as long as the process: its connection must not outlive
            # CONN_MAX_AGE or a database restart (as channels does around each call).
            close_old_connections()
            try:
                self.flush()
            except Exception:  # the thread must outlive any one bad flush
                logger.exception("release metrics flush failed")
            finally:
                close_old_connections()
        connections.close_all()  # this thread's connection

    def stop(self) -> None:
        """End the flush thread (after one last flush) and close its connection."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._stop.set()
            thread.join()
            self._stop.clear()
        self.flush()

    def reset(self) -> None:
        """A forked child starts empty, without the parent's thread (Celery prefork)."""
        self._lock = threading.Lock()
        self._pending = {}
        self._thread = None
        self._stop = threading.Event()


REPLY_BUFFER = ReplyBuffer()
os.register_at_fork(after_in_child=REPLY_BUFFER.reset)


@atexit.register
def metrics_flush() -> int:
    """Write this process's buffered reply counts now (at exit, and for tests and
    readers in this process that must see every reply). Returns the replies written."""
    try:
        return REPLY_BUFFER.flush()
    except Exception:
        logger.exception("release metrics flush failed")
        return 0


def reply_counts(facts: ReplyFacts) -> tuple[ReplyCounts, bool, bool, bool]:
    """One reply's counts, and whether it was an error, a fallback, a handoff request."""
    error = is_error(facts.status, facts.metadata)
    fallback = bool(facts.metadata.get("fallback"))
    handoff = handoff_requested(intent=facts.intent, route_reason=facts.route_reason)
    cost = cost_of(facts.model, facts.prompt_tokens, facts.completion_tokens)
    # What the same reply would have cost on the L3 model: its prompt carries the
    # system prompt and context (a fixed overhead) plus the question; the answer is
    # as long as the one given. A model reply's own counts win when they are larger.
    baseline = cost_of(
        settings.TIERDESK_COST_BASELINE_MODEL,
        max(
            facts.prompt_tokens,
            settings.TIERDESK_COST_BASELINE_PROMPT_TOKENS + estimate_tokens(facts.question),
        ),
        max(facts.completion_tokens, estimate_tokens(facts.text)),
    )
    counts = ReplyCounts(
        replies=1,
        errors=int(error),
        fallbacks=int(fallback),
        handoffs=int(handoff),
        model_turns=int(bool(facts.metadata.get("model_planned"))),
        degraded=int(bool(facts.metadata.get("degraded"))),
        prompt_tokens=facts.prompt_tokens,
        completion_tokens=facts.completion_tokens,
        cost=cost,
        baseline_cost=baseline,
    )
    if facts.first_chunk_ms is not None:
        counts.latency_count = 1
        counts.latency_sum_ms = facts.first_chunk_ms
        counts.hist = hist_add(counts.hist, facts.first_chunk_ms)
    return counts, error, fallback, handoff


def reply_record(facts: ReplyFacts, *, at: datetime | None = None) -> None:
    """Add one finished reply to its minute (the release clock's minute): buffered in
    this process when ``TIERDESK_METRICS_FLUSH_S`` > 0 (``ReplyBuffer``), else written
    at once."""
    minute = clock.minute_floor(at or clock.now())
    counts, error, fallback, handoff = reply_counts(facts)
    key: MinuteKey = (minute, facts.release_id, facts.variant, facts.tier or "none")
    if settings.TIERDESK_METRICS_FLUSH_S > 0:
        REPLY_BUFFER.add(key, counts)
    else:
        _minute_update(
            minute=minute,
            release_id=facts.release_id,
            variant=facts.variant,
            tier=facts.tier,
            apply=counts.apply,
        )
    for observe in OBSERVERS.reply:
        observe(
            facts,
            error=error,
            fallback=fallback,
            handoff=handoff,
            cost=counts.cost,
            baseline=counts.baseline_cost,
        )


def rating_record(
    *,
    minute: datetime,
    release_id: int | None,
    variant: str,
    tier: str,
    satisfied: bool,
    previous: bool | None,
) -> None:
    """Count a rating in ``minute``; a changed rating (``previous`` set) only moves the
    satisfied count of the minute it was first given in, so nothing counts twice."""

    def apply(row: MetricMinute) -> None:
        if previous is None:
            row.ratings += 1
            row.satisfied += int(satisfied)
        else:
            row.satisfied = max(0, row.satisfied + int(satisfied) - int(previous))

    _minute_update(minute=minute, release_id=release_id, variant=variant, tier=tier, apply=apply)
    for observe in OBSERVERS.rating:
        observe(variant=variant, tier=tier, satisfied=satisfied, changed=previous is not None)


# --- windows -------------------------------------------------------------------------------


@dataclass
class Window:
    """Aggregates over some minutes of one release/variant (optionally one tier)."""

    replies: int = 0
    errors: int = 0
    fallbacks: int = 0
    handoffs: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    baseline_cost: float = 0.0
    ratings: int = 0
    satisfied: int = 0
    model_turns: int = 0
    degraded: int = 0
    hist: list[int] = field(default_factory=lambda: [0] * HIST_SIZE)

    def add(self, row: MetricMinute) -> None:
        _sum_into(self, row, (*REPLY_SUMS, "ratings", "satisfied"))
        self.hist = hist_merge([self.hist, list(row.latency_hist or [])])

    @property
    def latency_n(self) -> int:
        return sum(self.hist)

    def p(self, q: float) -> float | None:
        return hist_quantile(self.hist, q)

    @property
    def error_rate(self) -> float | None:
        return self.errors / self.replies if self.replies else None

    @property
    def fallback_rate(self) -> float | None:
        return self.fallbacks / self.replies if self.replies else None

    @property
    def degraded_share(self) -> float | None:
        """Of the replies that planned a model, the share sent without one (admission)."""
        return self.degraded / self.model_turns if self.model_turns else None

    @property
    def model_phrased_share(self) -> float | None:
        return None if self.degraded_share is None else 1 - self.degraded_share

    @property
    def csat(self) -> float | None:
        return self.satisfied / self.ratings if self.ratings else None

    @property
    def saving_ratio(self) -> float | None:
        """1 - cost / all-L3 cost: the share of the L3 bill this traffic did not run up."""
        return 1 - self.cost / self.baseline_cost if self.baseline_cost else None

    def summary(self) -> dict[str, Any]:
        def r(x: float | None, nd: int = 4) -> float | None:
            return None if x is None else round(x, nd)

        return {
            "replies": self.replies,
            "p50_ms": r(self.p(0.5), 1),
            "p95_ms": r(self.p(0.95), 1),
            "error_rate": r(self.error_rate),
            "fallback_rate": r(self.fallback_rate),
            "handoffs": self.handoffs,
            "model_turns": self.model_turns,
            "degraded": self.degraded,
            "model_phrased_share": r(self.model_phrased_share),
            "ratings": self.ratings,
            "csat": r(self.csat),
            "tokens": self.prompt_tokens + self.completion_tokens,
            "cost": r(self.cost, 6),
            "baseline_cost": r(self.baseline_cost, 6),
            "saving_ratio": r(self.saving_ratio),
        }


def window_read(
    *,
    release_id: int | None,
    variant: str | None,
    since: datetime,
    until: datetime,
    tier: str | None = None,
) -> Window:
    rows = MetricMinute.objects.filter(minute__gte=since, minute__lt=until)
    if release_id is not None:
        rows = rows.filter(release_id=release_id)
    if variant is not None:
        rows = rows.filter(variant=variant)
    if tier is not None:
        rows = rows.filter(tier=tier)
    window = Window()
    for row in rows:
        window.add(row)
    return window


def window_by_tier(
    *, release_id: int | None, variant: str | None, since: datetime, until: datetime
) -> dict[str, Window]:
    rows = MetricMinute.objects.filter(minute__gte=since, minute__lt=until)
    if release_id is not None:
        rows = rows.filter(release_id=release_id)
    if variant is not None:
        rows = rows.filter(variant=variant)
    tiers: dict[str, Window] = {}
    for row in rows:
        tiers.setdefault(row.tier, Window()).add(row)
    return tiers
