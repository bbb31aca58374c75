"""Releases, their audit trail, guardrail decisions and per-minute metrics.

Imported by ``routing.models`` so they belong to the routing app (one migration set).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

STABLE, CANDIDATE = "stable", "candidate"
VARIANT_CHOICES = [(STABLE, "stable"), (CANDIDATE, "candidate")]


class Release(models.Model):
    """A named configuration. One release is stable (``is_stable``); at most one other
    is the running candidate. Both rules are database constraints, so two operators
    clicking at once can't break them."""

    class Status(models.TextChoices):
        DRAFT = "draft", _("draft")
        RUNNING = "running", _("running")
        FROZEN = "frozen", _("frozen")
        ROLLED_BACK = "rolled_back", _("rolled back")
        PROMOTED = "promoted", _("promoted")

    name = models.SlugField(max_length=64, unique=True, verbose_name=_("name"))
    description = models.TextField(blank=True, verbose_name=_("description"))
    # Typed and validated by releases.config.config_parse.
    config = models.JSONField(default=dict, blank=True, verbose_name=_("config"))
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.DRAFT, verbose_name=_("status")
    )
    is_stable = models.BooleanField(default=False, verbose_name=_("is stable"))
    # The candidate's share of sessions, in percent (buckets 0..weight-1).
    weight = models.PositiveSmallIntegerField(default=0, verbose_name=_("weight"))
    max_weight = models.PositiveSmallIntegerField(default=50, verbose_name=_("max weight"))
    # Paused: the schedule stops raising the weight; guardrails keep watching.
    paused = models.BooleanField(default=False, verbose_name=_("paused"))
    started_at = models.DateTimeField(null=True, blank=True, verbose_name=_("started at"))
    last_step_at = models.DateTimeField(null=True, blank=True, verbose_name=_("last step at"))
    # When the candidate reached max_weight (promotion waits a hold time after it).
    at_max_since = models.DateTimeField(null=True, blank=True, verbose_name=_("at max since"))
    finished_at = models.DateTimeField(null=True, blank=True, verbose_name=_("finished at"))
    # The longest per-check strong-evidence streak (GuardrailDecision.numbers["streaks"];
    # TIERDESK_RELEASE_BREACHES_TO_ROLLBACK of them roll back), or 1 while a breach waits
    # for its confirmation on later data (numbers["waiting"]). Display only: not read back.
    breach_streak = models.PositiveSmallIntegerField(default=0, verbose_name=_("breach streak"))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("created by"),
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("release")
        verbose_name_plural = _("releases")
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

    release = models.ForeignKey(
        Release, on_delete=models.CASCADE, related_name="events", verbose_name=_("release")
    )
    at = models.DateTimeField(db_index=True, verbose_name=_("at"))
    # A username, or "system:schedule" / "system:guardrail".
    actor = models.CharField(max_length=150, verbose_name=_("actor"))
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("user"),
    )
    action = models.CharField(max_length=32, verbose_name=_("action"))
    reason = models.TextField(verbose_name=_("reason"))
    before = models.JSONField(default=dict, blank=True, verbose_name=_("before"))
    after = models.JSONField(default=dict, blank=True, verbose_name=_("after"))

    class Meta:
        verbose_name = _("release event")
        verbose_name_plural = _("release events")
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.actor} {self.action} {self.release_id}"


class GuardrailDecision(models.Model):
    """One evaluation of the candidate against the stable release, with its numbers."""

    class Outcome(models.TextChoices):
        INSUFFICIENT = "insufficient", _("not enough data")
        PASS = "pass", _("within limits")
        BREACH = "breach", _("breach (watching)")
        ROLLBACK = "rollback", _("frozen and rolled back")
        PROMOTE = "promote", _("promoted")

    release = models.ForeignKey(
        Release, on_delete=models.CASCADE, related_name="decisions", verbose_name=_("release")
    )
    stable = models.ForeignKey(
        Release, null=True, on_delete=models.SET_NULL, related_name="+", verbose_name=_("stable")
    )
    at = models.DateTimeField(db_index=True, verbose_name=_("at"))
    outcome = models.CharField(max_length=16, choices=Outcome.choices, verbose_name=_("outcome"))
    summary = models.TextField(verbose_name=_("summary"))
    # {"latency": {...}, "errors": {...}, "csat": {...}, "weight": n, "settings": {...}}
    numbers = models.JSONField(default=dict, verbose_name=_("numbers"))

    class Meta:
        verbose_name = _("guardrail decision")
        verbose_name_plural = _("guardrail decisions")
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.outcome}: {self.summary[:60]}"


class MetricMinute(models.Model):
    """Per-minute aggregates per release, variant and tier, written as replies finish
    and ratings arrive. First-chunk latency is a histogram (fixed log-spaced buckets,
    releases.metrics.LATENCY_BOUNDS_MS) so windows merge into exact-enough
    percentiles without keeping every reply."""

    minute = models.DateTimeField(verbose_name=_("minute"))
    release = models.ForeignKey(
        Release, null=True, on_delete=models.CASCADE, related_name="+", verbose_name=_("release")
    )
    variant = models.CharField(max_length=16, choices=VARIANT_CHOICES, verbose_name=_("variant"))
    tier = models.CharField(max_length=12, verbose_name=_("tier"))
    replies = models.PositiveIntegerField(default=0, verbose_name=_("replies"))
    errors = models.PositiveIntegerField(default=0, verbose_name=_("errors"))
    fallbacks = models.PositiveIntegerField(default=0, verbose_name=_("fallbacks"))
    handoffs = models.PositiveIntegerField(default=0, verbose_name=_("handoffs"))
    prompt_tokens = models.PositiveBigIntegerField(default=0, verbose_name=_("prompt tokens"))
    completion_tokens = models.PositiveBigIntegerField(
        default=0, verbose_name=_("completion tokens")
    )
    # Modelled cost (settings TIERDESK_MODEL_PRICES) and what the same replies would
    # have cost on the L3 model: the all-L3 baseline.
    cost = models.FloatField(default=0.0, verbose_name=_("cost"))
    baseline_cost = models.FloatField(default=0.0, verbose_name=_("baseline cost"))
    latency_count = models.PositiveIntegerField(default=0, verbose_name=_("latency count"))
    latency_sum_ms = models.FloatField(default=0.0, verbose_name=_("latency sum ms"))
    latency_hist = models.JSONField(default=list, verbose_name=_("latency hist"))
    ratings = models.PositiveIntegerField(default=0, verbose_name=_("ratings"))
    satisfied = models.PositiveIntegerField(default=0, verbose_name=_("satisfied"))
    # Replies that planned a model, and those of them that degraded (admission control:
    # the tier's text that needs no model went out; inference.admission).
    model_turns = models.PositiveIntegerField(default=0, verbose_name=_("model turns"))
    degraded = models.PositiveIntegerField(default=0, verbose_name=_("degraded"))

    class Meta:
        verbose_name = _("metric minute")
        verbose_name_plural = _("metric minutes")
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
