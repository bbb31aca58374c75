"""Releases, their audit trail, guardrail decisions and per-minute metrics.

Imported by ``routing.models`` so they belong to the routing app (one migration set).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

STABLE, CANDIDATE = "stable", "candidate"
VARIANT_CHOICES = [(STABLE, "stable"), (CANDIDATE, "candidate")]


class Release(models.Model):
    """A named configuration. One release is stable (``is_stable``); at most one other
    is the running candidate. Both rules are database constraints, so two operators
    clicking at once can't break them."""

    class Status(models.TextChoices):
        DRAFT = "draft", "draft"
        RUNNING = "running", "running"
        FROZEN = "frozen", "frozen"
        ROLLED_BACK = "rolled_back", "rolled back"
        PROMOTED = "promoted", "promoted"

    name = models.SlugField(max_length=64, unique=True)
    description = models.TextField(blank=True)
    # Typed and validated by releases.config.config_parse.
    config = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    is_stable = models.BooleanField(default=False)
    # The candidate's share of sessions, in percent (buckets 0..weight-1).
    weight = models.PositiveSmallIntegerField(default=0)
    max_weight = models.PositiveSmallIntegerField(default=50)
    # Paused: the schedule stops raising the weight; guardrails keep watching.
    paused = models.BooleanField(default=False)
    started_at = models.DateTimeField(null=True, blank=True)
    last_step_at = models.DateTimeField(null=True, blank=True)
    # When the candidate reached max_weight (promotion waits a hold time after it).
    at_max_since = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The longest per-check strong-evidence streak (GuardrailDecision.numbers["streaks"];
    # TIERDESK_RELEASE_BREACHES_TO_ROLLBACK of them roll back), or 1 while a breach waits
    # for its confirmation on later data (numbers["waiting"]). Display only: not read back.
    breach_streak = models.PositiveSmallIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["is_stable"], condition=Q(is_stable=True), name="release_one_stable"
            ),
            models.UniqueConstraint(
                # Freezing rolls back in the same transaction, so "running" is the
                # only state a candidate lives in.
                fields=["status"],
                condition=Q(status="running"),
                name="release_one_candidate",
            ),
            models.CheckConstraint(condition=Q(weight__lte=100), name="release_weight_percent"),
        ]
        permissions = [
            ("operate_release", "Can start, weigh, pause, resume, promote and roll back"),
            ("view_release_metrics", "Can view the operator console and release metrics"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({'stable' if self.is_stable else self.status})"


class ReleaseEvent(models.Model):
    """The audit trail: who changed what, when, and why. Never edited or deleted."""

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="events")
    at = models.DateTimeField(db_index=True)
    # A username, or "system:schedule" / "system:guardrail".
    actor = models.CharField(max_length=150)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    action = models.CharField(max_length=32)
    reason = models.TextField()
    before = models.JSONField(default=dict, blank=True)
    after = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.actor} {self.action} {self.release_id}"


class GuardrailDecision(models.Model):
    """One evaluation of the candidate against the stable release, with its numbers."""

    class Outcome(models.TextChoices):
        INSUFFICIENT = "insufficient", "not enough data"
        PASS = "pass", "within limits"
        BREACH = "breach", "breach (watching)"
        ROLLBACK = "rollback", "frozen and rolled back"
        PROMOTE = "promote", "promoted"

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="decisions")
    stable = models.ForeignKey(Release, null=True, on_delete=models.SET_NULL, related_name="+")
    at = models.DateTimeField(db_index=True)
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    summary = models.TextField()
    # {"latency": {...}, "errors": {...}, "csat": {...}, "weight": n, "settings": {...}}
    numbers = models.JSONField(default=dict)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.outcome}: {self.summary[:60]}"


class MetricMinute(models.Model):
    """Per-minute aggregates per release, variant and tier, written as replies finish
    and ratings arrive. First-chunk latency is a histogram (fixed log-spaced buckets,
    releases.metrics.LATENCY_BOUNDS_MS) so windows merge into exact-enough
    percentiles without keeping every reply."""

    minute = models.DateTimeField()
    release = models.ForeignKey(Release, null=True, on_delete=models.CASCADE, related_name="+")
    variant = models.CharField(max_length=16, choices=VARIANT_CHOICES)
    tier = models.CharField(max_length=12)
    replies = models.PositiveIntegerField(default=0)
    errors = models.PositiveIntegerField(default=0)
    fallbacks = models.PositiveIntegerField(default=0)
    handoffs = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    # Modelled cost (settings TIERDESK_MODEL_PRICES) and what the same replies would
    # have cost on the L3 model: the all-L3 baseline.
    cost = models.FloatField(default=0.0)
    baseline_cost = models.FloatField(default=0.0)
    latency_count = models.PositiveIntegerField(default=0)
    latency_sum_ms = models.FloatField(default=0.0)
    latency_hist = models.JSONField(default=list)
    ratings = models.PositiveIntegerField(default=0)
    satisfied = models.PositiveIntegerField(default=0)
    # Replies that planned a model, and those of them that degraded (admission control:
    # the tier's text that needs no model went out; inference.admission).
    model_turns = models.PositiveIntegerField(default=0)
    degraded = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["minute"]
        constraints = [
            models.UniqueConstraint(
                fields=["minute", "release", "variant", "tier"], name="metricminute_unique"
            )
        ]
        # Named as it was created under routing (the table moved apps in releases 0001).
        indexes = [
            models.Index(fields=["release", "minute"], name="routing_met_release_3eff0d_idx")
        ]

    def __str__(self) -> str:
        return f"{self.minute:%H:%M} {self.variant} {self.tier}: {self.replies}"
