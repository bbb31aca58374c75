"""Reads for the operator console: the release state and the metric time series."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Q
from django.utils.translation import gettext_noop

from .metrics import Window
from .models import GuardrailDecision, MetricMinute, Release, ReleaseEvent

Series = dict[str, list[tuple[datetime, float | None]]]


@dataclass
class Overview:
    stable: Release | None
    candidate: Release | None
    releases: list[Release]
    decisions: list[GuardrailDecision]
    events: list[ReleaseEvent]
    # The latest automatic rollback, shown as a banner until a newer release starts.
    alert: GuardrailDecision | None


def release_overview(*, limit: int = 25, decisions: int = 8) -> Overview:
    active = list(Release.objects.filter(Q(is_stable=True) | Q(status=Release.Status.RUNNING)))
    stable = next((r for r in active if r.is_stable), None)
    candidate = next((r for r in active if r.status == Release.Status.RUNNING), None)
    latest_start = Release.objects.filter(started_at__isnull=False).order_by("-started_at").first()
    alert = (
        GuardrailDecision.objects.filter(outcome=GuardrailDecision.Outcome.ROLLBACK)
        .select_related("release")
        .order_by("-at", "-id")
        .first()
    )
    if (
        alert is not None
        and latest_start is not None
        and latest_start.pk != alert.release_id
        and latest_start.started_at
        and latest_start.started_at > alert.at
    ):
        alert = None  # a newer release started since: the banner is history
    return Overview(
        stable=stable,
        candidate=candidate,
        releases=list(Release.objects.all()[:limit]),
        decisions=_decisions(decisions),
        events=list(ReleaseEvent.objects.select_related("release")[:limit]),
        alert=alert,
    )


def _decisions(limit: int) -> list[GuardrailDecision]:
    """The latest evaluations, plus the latest decisions that changed something
    (rollbacks, promotions, breaches) however many evaluations came after them."""
    rows = GuardrailDecision.objects.select_related("release")
    notable = rows.filter(
        outcome__in=[
            GuardrailDecision.Outcome.ROLLBACK,
            GuardrailDecision.Outcome.PROMOTE,
            GuardrailDecision.Outcome.BREACH,
        ]
    )
    merged = {d.pk: d for d in [*rows[:limit], *notable[:10]]}
    return sorted(merged.values(), key=lambda d: (d.at, d.pk), reverse=True)


@dataclass
class Dashboard:
    since: datetime
    until: datetime
    step: timedelta
    by_variant: dict[str, Window] = field(default_factory=dict)
    by_tier: dict[str, Window] = field(default_factory=dict)
    total: Window = field(default_factory=Window)
    charts: dict[str, Series] = field(default_factory=dict)


def dashboard(*, until: datetime, hours: int, points: int = 48) -> Dashboard:
    """Totals and time series over ``hours`` before ``until``, in ``points`` buckets."""
    until = until.replace(second=0, microsecond=0) + timedelta(minutes=1)  # this minute too
    since = until - timedelta(hours=hours)
    step = timedelta(minutes=max(1, hours * 60 // points))
    n = int((until - since) / step) + 1
    starts = [since + i * step for i in range(n)]
    variant_buckets: dict[str, list[Window]] = {}
    tier_buckets: dict[str, list[Window]] = {}
    all_buckets = [Window() for _ in range(n)]
    board = Dashboard(since=since, until=until, step=step)
    rows = MetricMinute.objects.filter(minute__gte=since, minute__lt=until).order_by("minute")
    for row in rows:
        i = min(n - 1, int((row.minute - since) / step))
        variant_buckets.setdefault(row.variant, [Window() for _ in range(n)])[i].add(row)
        tier_buckets.setdefault(row.tier, [Window() for _ in range(n)])[i].add(row)
        all_buckets[i].add(row)
        board.by_variant.setdefault(row.variant, Window()).add(row)
        board.by_tier.setdefault(row.tier, Window()).add(row)
        board.total.add(row)

    def series(groups: dict[str, list[Window]], value: Callable[[Window, int], Any]) -> Series:
        return {
            name: [(starts[i], value(w, i)) for i, w in enumerate(buckets)]
            for name, buckets in sorted(groups.items())
        }

    def share(w: Window, i: int) -> float | None:
        total = all_buckets[i].replies
        return w.replies / total if total else None

    cumulative_cost: list[tuple[datetime, float | None]] = []
    cumulative_base: list[tuple[datetime, float | None]] = []
    cost = base = 0.0
    for i, w in enumerate(all_buckets):
        cost += w.cost
        base += w.baseline_cost
        cumulative_cost.append((starts[i], cost))
        cumulative_base.append((starts[i], base))
    board.charts = {
        "p95_variant": series(variant_buckets, lambda w, i: w.p(0.95)),
        "errors_variant": series(variant_buckets, lambda w, i: w.error_rate),
        "csat_variant": series(variant_buckets, lambda w, i: w.csat),
        "share_variant": series(variant_buckets, share),
        "p95_tier": series(tier_buckets, lambda w, i: w.p(0.95)),
        "share_tier": series(tier_buckets, share),
        # Series names are msgids: the console shows them translated.
        "cost": {
            gettext_noop("actual (modelled)"): cumulative_cost,
            gettext_noop("all-L3 baseline"): cumulative_base,
        },
    }
    return board
