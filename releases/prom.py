"""Prometheus metrics (prometheus-client), served at ``/metrics`` with credentials.

Two kinds, in one registry of our own (not the global one, so a test or a second
import never registers twice):

- counters and a histogram this process updates as replies finish and ratings
  arrive. Scrape every Daphne process (as with any Python service without
  multiprocess mode) and sum them in PromQL;
- gauges read from the database at scrape time: the release state and the recent
  window per variant and tier (with the model-phrased share: of the replies that
  planned a model, those a model wrote). These are the same in every process and are
  what the guardrails see;
- gauges of this process's model queues at scrape time (``inference.queue``: slots,
  holding, waiting, mean hold) and counters of its waits and degraded turns, for
  admission control (``inference.admission``).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from .metrics import ReplyFacts

# No auto-describe: describing the DB collector would query at import time.
REGISTRY = CollectorRegistry(auto_describe=False)
_LABELS = ["variant", "tier"]

REPLIES = Counter("tierdesk_replies", "Replies finished", _LABELS, registry=REGISTRY)
ERRORS = Counter("tierdesk_reply_errors", "Replies that failed", _LABELS, registry=REGISTRY)
FALLBACKS = Counter(
    "tierdesk_reply_fallbacks", "Replies the fallback model wrote", _LABELS, registry=REGISTRY
)
HANDOFFS = Counter(
    "tierdesk_handoff_requests", "Shopper messages asking for a person", _LABELS, registry=REGISTRY
)
TOKENS = Counter("tierdesk_tokens", "Model tokens", [*_LABELS, "kind"], registry=REGISTRY)
COST = Counter("tierdesk_cost_usd", "Modelled cost of the replies", _LABELS, registry=REGISTRY)
BASELINE = Counter(
    "tierdesk_baseline_cost_usd",
    "Modelled cost of the same replies on the L3 model (all-L3 baseline)",
    _LABELS,
    registry=REGISTRY,
)
RATINGS = Counter(
    "tierdesk_ratings", "CSAT ratings given or changed", [*_LABELS, "satisfied"], registry=REGISTRY
)
DEGRADED = Counter(
    "tierdesk_replies_degraded",
    "Replies that planned a model and went out without one (admission control)",
    [*_LABELS, "reason"],
    registry=REGISTRY,
)
MODEL_TURNS = Counter(
    "tierdesk_replies_model_planned",
    "Replies that planned a model (the degraded share's denominator)",
    _LABELS,
    registry=REGISTRY,
)
FIRST_CHUNK = Histogram(
    "tierdesk_first_chunk_seconds",
    "Time from the shopper's message to the first chunk of the reply",
    _LABELS,
    buckets=(0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0),
    registry=REGISTRY,
)


def reply_observe(
    facts: ReplyFacts, *, error: bool, fallback: bool, handoff: bool, cost: float, baseline: float
) -> None:
    labels = {"variant": facts.variant, "tier": facts.tier or "none"}
    REPLIES.labels(**labels).inc()
    if error:
        ERRORS.labels(**labels).inc()
    if fallback:
        FALLBACKS.labels(**labels).inc()
    if handoff:
        HANDOFFS.labels(**labels).inc()
    if facts.metadata.get("model_planned"):
        MODEL_TURNS.labels(**labels).inc()
    degraded = facts.metadata.get("degraded")
    if degraded:
        DEGRADED.labels(**labels, reason=str(degraded.get("reason", ""))).inc()
    TOKENS.labels(**labels, kind="prompt").inc(facts.prompt_tokens)
    TOKENS.labels(**labels, kind="completion").inc(facts.completion_tokens)
    COST.labels(**labels).inc(cost)
    BASELINE.labels(**labels).inc(baseline)
    if facts.first_chunk_ms is not None:
        FIRST_CHUNK.labels(**labels).observe(facts.first_chunk_ms / 1000)


def rating_observe(*, variant: str, tier: str, satisfied: bool, changed: bool) -> None:
    RATINGS.labels(variant=variant, tier=tier or "none", satisfied=str(satisfied).lower()).inc()


class ReleaseCollector(Collector):
    """Release state and the recent window, from the database, at scrape time."""

    def collect(self) -> Iterator[Metric]:
        from . import clock
        from .metrics import window_by_tier
        from .models import Release

        weight = GaugeMetricFamily(
            "tierdesk_release_weight_percent",
            "Share of sessions on the release",
            labels=["release", "role"],
        )
        active = list(Release.objects.filter(is_stable=True)) + list(
            Release.objects.filter(status=Release.Status.RUNNING)
        )
        for release in active:
            role = "stable" if release.is_stable else "candidate"
            share = (
                release.weight
                if role == "candidate"
                else 100 - sum(r.weight for r in active if not r.is_stable)
            )
            weight.add_metric([release.name, role], share)
        yield weight

        minutes = settings.TIERDESK_METRICS_PROM_WINDOW_MIN
        # The current minute counts: its row fills up as replies land.
        until = clock.minute_floor(clock.now()) + timedelta(minutes=1)
        since = until - timedelta(minutes=minutes)
        gauges: dict[str, GaugeMetricFamily] = {
            name: GaugeMetricFamily(
                f"tierdesk_window_{name}", f"{text} over the last {minutes} minutes", labels=_LABELS
            )
            for name, text in (
                ("first_chunk_p50_seconds", "First-chunk latency p50"),
                ("first_chunk_p95_seconds", "First-chunk latency p95"),
                ("error_ratio", "Error rate"),
                ("fallback_ratio", "Fallback rate"),
                ("csat_ratio", "Share of satisfied ratings"),
                ("cost_saving_ratio", "1 - cost / all-L3 baseline cost"),
                ("model_phrased_ratio", "Share of model-planned replies a model wrote"),
            )
        }
        for variant in ("stable", "candidate"):
            tiers = window_by_tier(release_id=None, variant=variant, since=since, until=until)
            for tier, window in tiers.items():
                values: dict[str, Any] = {
                    "first_chunk_p50_seconds": _s(window.p(0.5)),
                    "first_chunk_p95_seconds": _s(window.p(0.95)),
                    "error_ratio": window.error_rate,
                    "fallback_ratio": window.fallback_rate,
                    "csat_ratio": window.csat,
                    "cost_saving_ratio": window.saving_ratio,
                    "model_phrased_ratio": window.model_phrased_share,
                }
                for name, value in values.items():
                    if value is not None:
                        gauges[name].add_metric([variant, tier], value)
        yield from gauges.values()


class QueueCollector(Collector):
    """This process's model queues (one per role), at scrape time."""

    def collect(self) -> Iterator[Metric]:
        from inference.queue import gates_snapshot

        gauges = {
            key: GaugeMetricFamily(f"tierdesk_model_queue_{key}", text, labels=["role"])
            for key, text in (
                ("slots", "Model slots this process may hold"),
                ("active", "Model slots held now"),
                ("waiting", "Turns waiting for a model slot now (queue depth)"),
                ("hold_seconds", "Moving average of how long a generation holds a slot"),
            )
        }
        waits = CounterMetricFamily(
            "tierdesk_model_queue_waits", "Turns that took a model slot", labels=["role"]
        )
        wait_s = CounterMetricFamily(
            "tierdesk_model_queue_wait_seconds",
            "Seconds turns waited for a model slot, in all",
            labels=["role"],
        )
        for role, gate in sorted(gates_snapshot().items()):
            for key, field in (
                ("slots", "slots"),
                ("active", "active"),
                ("waiting", "waiting"),
                ("hold_seconds", "hold_s"),
            ):
                if gate[field] is not None:
                    gauges[key].add_metric([role], float(gate[field] or 0))
            waits.add_metric([role], float(gate["waits"] or 0))
            wait_s.add_metric([role], float(gate["wait_s"] or 0))
        yield from gauges.values()
        yield waits
        yield wait_s


def _s(ms: float | None) -> float | None:
    return None if ms is None else ms / 1000


REGISTRY.register(ReleaseCollector())
REGISTRY.register(QueueCollector())


def exposition() -> bytes:
    return generate_latest(REGISTRY)
