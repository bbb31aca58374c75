"""The guardrails' and the schedule's decisions on a running release.

``release_tick`` is what Celery beat runs every minute: guardrails first, then
promotion, then the schedule step; it is idempotent (each step is due at most once
per interval, a second run in the same minute finds nothing to do). Each evaluation
is stored as a ``GuardrailDecision`` with its numbers; the rollback, promotion and
weight step go through the operators' actions in ``releases.services``.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction

from . import clock
from .assignment import baseline_ensure
from .guardrails import (
    BREACH,
    INSUFFICIENT,
    STRONG,
    Check,
    Evaluation,
    Fired,
    GuardSettings,
    evaluate,
    planned_evaluations,
    rule_step,
    status_at,
    streaks_update,
)
from .metrics import metrics_flush, window_by_tier, window_read
from .models import CANDIDATE, STABLE, GuardrailDecision, Release
from .services import (
    GUARDRAIL_ACTOR,
    SCHEDULE_ACTOR,
    release_lock,
    release_promote,
    release_rollback,
    release_weight_set,
)

logger = logging.getLogger(__name__)


def guard_settings() -> GuardSettings:
    return GuardSettings(
        latency_ratio=1 + settings.TIERDESK_RELEASE_GUARD_LATENCY_PCT / 100,
        latency_min_delta_ms=settings.TIERDESK_RELEASE_GUARD_LATENCY_MIN_MS,
        error_pp=settings.TIERDESK_RELEASE_GUARD_ERROR_PP,
        csat_pp=settings.TIERDESK_RELEASE_GUARD_CSAT_PP,
        degraded_pp=settings.TIERDESK_RELEASE_GUARD_DEGRADED_PP,
        handoff_pp=settings.TIERDESK_RELEASE_GUARD_HANDOFF_PP,
        min_replies=settings.TIERDESK_RELEASE_MIN_REPLIES,
        min_ratings=settings.TIERDESK_RELEASE_MIN_RATINGS,
        alpha=settings.TIERDESK_RELEASE_ALPHA,
    )


def release_evaluate(
    *, release: Release, stable: Release, now: datetime, after: datetime | None = None
) -> Evaluation:
    """Candidate vs stable over the same minutes since the candidate started: the
    configured windows, or with ``after`` only the minutes after that one (every check,
    CSAT included: a confirmation on data an earlier breach did not see)."""
    started = release.started_at or now
    since = max(started, now - timedelta(minutes=settings.TIERDESK_RELEASE_GUARD_WINDOW_MIN))
    since_csat = max(started, now - timedelta(minutes=settings.TIERDESK_RELEASE_CSAT_WINDOW_MIN))
    if after is not None:
        since = since_csat = max(started, clock.minute_floor(after) + timedelta(minutes=1))
    since, since_csat = clock.minute_floor(since), clock.minute_floor(since_csat)
    # Until the end of this minute: the current minute's replies count as they land.
    until = clock.minute_floor(now) + timedelta(minutes=1)

    def read(rel: Release, variant: str, start: datetime) -> Any:
        return window_read(release_id=rel.pk, variant=variant, since=start, until=until)

    def tiers(rel: Release, variant: str) -> Any:
        return window_by_tier(release_id=rel.pk, variant=variant, since=since, until=until)

    return evaluate(
        candidate=read(release, CANDIDATE, since),
        stable=read(stable, STABLE, since),
        candidate_tiers=tiers(release, CANDIDATE),
        stable_tiers=tiers(stable, STABLE),
        candidate_csat=read(release, CANDIDATE, since_csat),
        stable_csat=read(stable, STABLE, since_csat),
        cfg=guard_settings(),
    )


def _decision(
    release: Release,
    stable: Release,
    *,
    at: datetime,
    outcome: str,
    summary: str,
    evaluation: Evaluation,
    extra: dict[str, Any] | None = None,
) -> GuardrailDecision:
    numbers = {
        "weight": release.weight,
        "checks": [c.as_dict() for c in evaluation.checks],
        "settings": guard_settings().__dict__,
        **(extra or {}),
    }
    log = logger.warning if outcome in ("rollback", "breach") else logger.info
    log("guardrail %s for %s: %s", outcome, release.name, summary)
    return GuardrailDecision.objects.create(
        release=release, stable=stable, at=at, outcome=outcome, summary=summary, numbers=numbers
    )


def release_planned_evaluations(release: Release) -> int:
    """The evaluations from this release's start to its planned promotion."""
    return planned_evaluations(
        start_weight=settings.TIERDESK_RELEASE_START_WEIGHT,
        max_weight=release.max_weight,
        step_pct=settings.TIERDESK_RELEASE_STEP_PCT,
        step_interval_min=settings.TIERDESK_RELEASE_STEP_INTERVAL_MIN,
        hold_min=settings.TIERDESK_RELEASE_PROMOTE_HOLD_MIN,
        tick_s=settings.TIERDESK_RELEASE_TICK_S,
    )


def _check_of(data: dict[str, Any]) -> Check:
    known = Check.__dataclass_fields__
    return Check(**{k: v for k, v in data.items() if k in known})


def _rule_state_before(
    release: Release, now: datetime, factor: float
) -> tuple[dict[str, str], dict[str, int]]:
    """The rollback rule's state before this evaluation: the breaches waiting for their
    confirmation (check -> minute) and the strong-evidence streaks.

    Every decision stores them (``numbers["waiting"]``, ``numbers["streaks"]``, and what
    they were before it in ``*_before``). A second evaluation in the same minute (a
    duplicate beat, a ``releases.release_check`` on demand) starts from where the
    minute's first one did, so one minute counts once. A release whose decisions predate
    this rule has the strong streaks rebuilt once from the stored checks, and the last
    decision's breaches wait for confirmation from its minute."""
    decisions = GuardrailDecision.objects.filter(release=release)
    last = decisions.order_by("-at", "-id").only("at", "numbers").first()
    if last is None:
        return {}, {}
    same_minute = clock.minute_floor(last.at) == clock.minute_floor(now)
    suffix = "_before" if same_minute else ""
    waiting, stored = last.numbers.get("waiting" + suffix), last.numbers.get("streaks" + suffix)
    if isinstance(waiting, dict) and isinstance(stored, dict):
        return (
            {str(k): str(v) for k, v in waiting.items()},
            {str(k): int(v) for k, v in stored.items()},
        )
    streaks: dict[str, int] = {}
    for numbers in decisions.order_by("at", "id").values_list("numbers", flat=True):
        checks = [_check_of(c) for c in numbers.get("checks") or []]
        streaks = streaks_update(streaks, {c.name: status_at(c, factor) for c in checks})
    minute = clock.minute_floor(last.at).isoformat()
    waiting = {
        c["name"]: minute for c in last.numbers.get("checks") or [] if c.get("status") == BREACH
    }
    return waiting, streaks


def _pending(waiting: dict[str, str], streaks: dict[str, int], needed: int) -> str:
    parts = [
        f"{name} waiting for confirmation on the minutes after {at[11:16]}"
        for name, at in sorted(waiting.items())
    ] + [f"{name} strong {n} of {needed}" for name, n in sorted(streaks.items())]
    return "breach " + ", ".join(parts)


def _confirmations(
    release: Release, stable: Release, now: datetime, waiting: dict[str, str]
) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """Each waiting check evaluated on the minutes after its breach (one read per
    distinct breach minute): its status, and the checks as stored."""
    statuses: dict[str, str] = {}
    stored: list[dict[str, Any]] = []
    for at in sorted(set(waiting.values())):
        fresh = release_evaluate(
            release=release, stable=stable, now=now, after=datetime.fromisoformat(at)
        )
        by_name = {c.name: c for c in fresh.checks}
        for name in sorted(n for n, t in waiting.items() if t == at):
            check = by_name.get(name)
            statuses[name] = check.status if check is not None else INSUFFICIENT
            if check is not None:
                stored.append(check.as_dict() | {"after": at})
    return statuses, stored


def release_tick(*, now: datetime | None = None) -> dict[str, Any]:
    """One beat: evaluate the running candidate, then promote it or step its weight."""
    now = now or clock.now()
    candidate = Release.objects.filter(status=Release.Status.RUNNING).first()
    if candidate is None:
        return {"outcome": "no_candidate"}
    return release_check(release_id=candidate.pk, now=now)


def _rollback_rule(
    fired: Fired,
    *,
    streaks: dict[str, int],
    waiting_before: dict[str, str],
    confirm_checks: list[dict[str, Any]],
    planned: int,
    strict_alpha: float,
) -> tuple[str, dict[str, Any]]:
    """Which path of the rollback rule fired, on what evidence: the decision's text and
    its numbers."""
    if fired.path == STRONG:
        rule = (
            f"rollback rule: {fired.check} breached at p < {strict_alpha:.2g} "
            f"(alpha / {planned} planned evaluations) in {streaks[fired.check]} "
            f"evaluations in a row that had its minimum sample"
        )
        numbers: dict[str, Any] = {
            "check": fired.check,
            "path": fired.path,
            "breaches": streaks[fired.check],
        }
        return rule, numbers
    at = waiting_before[fired.check]
    confirm = next(c for c in confirm_checks if c["name"] == fired.check)
    rule = (
        f"rollback rule: {fired.check} breached at {at[11:16]} and again on the "
        f"minutes after it (data that breach did not see: "
        f"{confirm['n_candidate']}/{confirm['n_stable']}, "
        f"p={confirm['p_value']:.2g})"
    )
    return rule, {"check": fired.check, "path": fired.path, "after": at}


def _rollback(
    release: Release,
    stable: Release,
    now: datetime,
    evaluation: Evaluation,
    extra: dict[str, Any],
    rule: str,
    numbers: dict[str, Any],
) -> dict[str, Any]:
    """Store the rollback decision and roll the release back, frozen."""
    summary = f"{rule}; {evaluation.summary()}"
    decision = _decision(
        release,
        stable,
        at=now,
        outcome=GuardrailDecision.Outcome.ROLLBACK,
        summary=summary,
        evaluation=evaluation,
        extra=extra | {"rule": numbers},
    )
    release_rollback(
        release_id=release.pk,
        user=None,
        actor=GUARDRAIL_ACTOR,
        freeze=True,
        reason=f"guardrail decision #{decision.pk}: {summary}",
    )
    return {"outcome": "rollback", "decision": decision.pk}


def _promotion(
    release: Release,
    stable: Release,
    now: datetime,
    evaluation: Evaluation,
    extra: dict[str, Any],
    *,
    waiting: dict[str, str],
    streaks: dict[str, int],
) -> dict[str, Any] | None:
    """Promote the release when it is due (held at its ceiling long enough, healthy with
    data, nothing waiting): store the decision and promote; None when not due."""
    hold = timedelta(minutes=settings.TIERDESK_RELEASE_PROMOTE_HOLD_MIN)
    ready = (
        settings.TIERDESK_RELEASE_AUTO_PROMOTE
        and not release.paused
        and release.at_max_since is not None
        and now - release.at_max_since >= hold
        and evaluation.healthy_with_data
        # A breach neither confirmed nor cleared by a pass with data waits.
        and not waiting
        and not streaks
    )
    if not ready:
        return None
    summary = f"held at {release.weight}% for {hold}; {evaluation.summary()}"
    decision = _decision(
        release,
        stable,
        at=now,
        outcome=GuardrailDecision.Outcome.PROMOTE,
        summary=summary,
        evaluation=evaluation,
        extra=extra,
    )
    release_promote(
        release_id=release.pk,
        user=None,
        actor=GUARDRAIL_ACTOR,
        reason=f"guardrail decision #{decision.pk}: {summary}",
    )
    return {"outcome": "promote", "decision": decision.pk}


def _stable() -> Release:
    """The stable release the candidate is compared with (created on first use)."""
    return (
        baseline_ensure()
        if not Release.objects.filter(is_stable=True).exists()
        else (Release.objects.get(is_stable=True))
    )


def _pass(
    release: Release,
    stable: Release,
    now: datetime,
    evaluation: Evaluation,
    extra: dict[str, Any],
    *,
    waiting: dict[str, str],
    streaks: dict[str, int],
    needed: int,
) -> str:
    """Store a pass (or, with no check's sample yet, insufficient data); return which."""
    outcome = (
        GuardrailDecision.Outcome.PASS
        if any(c.status != INSUFFICIENT for c in evaluation.checks)
        else GuardrailDecision.Outcome.INSUFFICIENT
    )
    summary = evaluation.summary()
    if waiting or streaks:
        summary = f"{_pending(waiting, streaks, needed)}; {summary}"
    _decision(
        release,
        stable,
        at=now,
        outcome=outcome,
        summary=summary,
        evaluation=evaluation,
        extra=extra,
    )
    return outcome


def release_check(*, release_id: int, now: datetime | None = None) -> dict[str, Any]:
    now = now or clock.now()
    # This process's buffered replies first (releases.metrics.ReplyBuffer): nothing in a
    # worker, but a process that serves replies and checks, like releases_demo, must
    # count its own. Other processes' replies arrive within TIERDESK_METRICS_FLUSH_S.
    metrics_flush()
    stable = _stable()
    with transaction.atomic():
        release = release_lock(release_id)
        if release.status != Release.Status.RUNNING:
            return {"outcome": "not_running", "status": release.status}
        evaluation = release_evaluate(release=release, stable=stable, now=now)
        needed = settings.TIERDESK_RELEASE_BREACHES_TO_ROLLBACK
        planned = release_planned_evaluations(release)
        factor = 1 / planned
        waiting_before, streaks_before = _rule_state_before(release, now, factor)
        confirmations, confirm_checks = _confirmations(release, stable, now, waiting_before)
        waiting, streaks, fired = rule_step(
            waiting=waiting_before,
            streaks=streaks_before,
            now_key=clock.minute_floor(now).isoformat(),
            statuses={c.name: c.status for c in evaluation.checks},
            strict={c.name: status_at(c, factor) for c in evaluation.checks},
            confirmations=confirmations,
            needed=needed,
        )
        extra: dict[str, Any] = {
            "waiting": waiting,
            "waiting_before": waiting_before,
            "streaks": streaks,
            "streaks_before": streaks_before,
            "planned_evaluations": planned,
            "strict_alpha": settings.TIERDESK_RELEASE_ALPHA * factor,
        }
        if confirm_checks:
            extra["confirmation_checks"] = confirm_checks
        longest = max([*streaks.values(), 1 if waiting else 0])
        if release.breach_streak != longest:
            release.breach_streak = longest
            release.save(update_fields=["breach_streak", "updated_at"])
        if fired is not None:
            rule, numbers = _rollback_rule(
                fired,
                streaks=streaks,
                waiting_before=waiting_before,
                confirm_checks=confirm_checks,
                planned=planned,
                strict_alpha=extra["strict_alpha"],
            )
            return _rollback(release, stable, now, evaluation, extra, rule, numbers)
        if evaluation.breaches:
            _decision(
                release,
                stable,
                at=now,
                outcome=GuardrailDecision.Outcome.BREACH,
                summary=f"{_pending(waiting, streaks, needed)}: {evaluation.summary()}",
                evaluation=evaluation,
                extra=extra,
            )
            return {"outcome": BREACH, "streak": longest, "waiting": waiting, "streaks": streaks}
        promoted = _promotion(
            release, stable, now, evaluation, extra, waiting=waiting, streaks=streaks
        )
        if promoted is not None:
            return promoted
        outcome = _pass(
            release, stable, now, evaluation, extra, waiting=waiting, streaks=streaks, needed=needed
        )
        step = _schedule_step(release, now)
    return {"outcome": str(outcome), "weight": step}


def _schedule_step(release: Release, now: datetime) -> int:
    """Raise the weight by one step when one is due (idempotent within an interval)."""
    interval = timedelta(minutes=settings.TIERDESK_RELEASE_STEP_INTERVAL_MIN)
    due = release.last_step_at is None or now - release.last_step_at >= interval
    if release.paused or not due or release.weight >= release.max_weight:
        return release.weight
    target = min(release.max_weight, release.weight + settings.TIERDESK_RELEASE_STEP_PCT)
    release_weight_set(
        release_id=release.pk,
        weight=target,
        user=None,
        actor=SCHEDULE_ACTOR,
        reason=f"schedule: +{settings.TIERDESK_RELEASE_STEP_PCT}% every {interval}",
    )
    return target
