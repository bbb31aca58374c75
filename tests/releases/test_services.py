"""Release lifecycle, audit trail and the schedule, on the compressed release clock."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from django.db import IntegrityError, transaction

from releases import decisions, services
from releases.models import GuardrailDecision, Release, ReleaseEvent
from releases.services import ReleaseError
from tests.releases.conftest import FakeClock

pytestmark = pytest.mark.django_db


def new_candidate(user: Any, name: str = "cand", config: dict[str, Any] | None = None) -> Release:
    release = services.release_create(
        name=name, config=config or {"prompt_version": "v2"}, user=user, reason="try v2 templates"
    )
    return services.release_start(release_id=release.pk, user=user, reason="start the test")


def test_lifecycle_is_audited_with_who_when_why(
    staff: dict[str, Any], release_clock: FakeClock
) -> None:
    op = staff["operator"]
    release = new_candidate(op)
    assert release.status == Release.Status.RUNNING and release.weight == 10
    release_clock.advance(minutes=30)
    services.release_weight_set(release_id=release.pk, weight=25, user=op, reason="looks fine")
    services.release_pause(release_id=release.pk, user=op, reason="weekend")
    services.release_resume(release_id=release.pk, user=op, reason="monday")
    services.release_promote(release_id=release.pk, user=op, reason="all green")
    release.refresh_from_db()
    assert release.is_stable and release.status == Release.Status.PROMOTED
    assert Release.objects.get(name="baseline").is_stable is False
    events = list(ReleaseEvent.objects.filter(release=release).order_by("at", "id"))
    assert [e.action for e in events] == ["create", "start", "weight", "pause", "resume", "promote"]
    assert all(e.actor == "operator" and e.user == op and e.reason for e in events)
    weight = events[2]
    assert weight.before["weight"] == 10 and weight.after["weight"] == 25
    assert weight.after["buckets_moved"] == [10, 25]
    assert weight.at == release_clock.at
    superseded = ReleaseEvent.objects.get(release__name="baseline", action="superseded")
    assert "cand promoted" in superseded.reason


def test_a_person_must_say_why(staff: dict[str, Any]) -> None:
    release = services.release_create(name="r1", config={}, user=staff["operator"], reason="x")
    with pytest.raises(ReleaseError, match="say why"):
        services.release_start(release_id=release.pk, user=staff["operator"], reason="  ")


def test_one_stable_and_at_most_one_candidate(staff: dict[str, Any]) -> None:
    op = staff["operator"]
    new_candidate(op, "first")
    second = services.release_create(name="second", config={}, user=op, reason="x")
    with pytest.raises(ReleaseError, match="another candidate"):
        services.release_start(release_id=second.pk, user=op, reason="second candidate")
    # The database refuses it too, whatever code path tries.
    with pytest.raises(IntegrityError), transaction.atomic():
        Release.objects.filter(pk=second.pk).update(status=Release.Status.RUNNING)
    with pytest.raises(IntegrityError), transaction.atomic():
        Release.objects.filter(pk=second.pk).update(is_stable=True)


def test_config_is_validated(staff: dict[str, Any]) -> None:
    from django.core.exceptions import ValidationError

    for bad in (
        {"roles": {"L1": "no-such-role"}},
        {"roles": {"L9": "fast"}},
        {"router": {"clarify_threshold": 3}},
        {"fast": {"max_tokens": "many"}},
        {"surprise": 1},
    ):
        with pytest.raises(ValidationError):
            services.release_create(name="bad", config=bad, user=staff["operator"], reason="x")
    ok = services.release_create(
        name="good",
        config={"roles": {"L1": "fallback"}, "fast": {"temperature": 0.1}},
        user=staff["operator"],
        reason="x",
    )
    assert ok.config == {"roles": {"L1": "fallback"}, "fast": {"temperature": 0.1}}


def test_schedule_steps_every_interval_up_to_the_maximum(
    staff: dict[str, Any], release_clock: FakeClock, settings: Any
) -> None:
    settings.TIERDESK_RELEASE_MAX_WEIGHT = 25
    settings.TIERDESK_RELEASE_AUTO_PROMOTE = False
    release = new_candidate(staff["operator"])
    weights = []
    for _ in range(24 * 6):  # a day of beats every 10 minutes
        release_clock.advance(minutes=10)
        decisions.release_tick()
        # A duplicate beat in the same minute changes nothing (idempotent).
        decisions.release_tick()
        release.refresh_from_db()
        weights.append(release.weight)
    # 10% at start, +5% at 2 h, 4 h and 6 h, then held at the 25% ceiling.
    assert weights[11] == 15 and weights[10] == 10
    assert weights[23] == 20 and weights[35] == 25 and weights[-1] == 25
    steps = ReleaseEvent.objects.filter(release=release, action="step")
    assert steps.count() == 3 and {e.actor for e in steps} == {"system:schedule"}
    # With no traffic every decision says there was not enough data, and says so.
    outcomes = set(
        GuardrailDecision.objects.filter(release=release).values_list("outcome", flat=True)
    )
    assert outcomes == {"insufficient"}


def test_paused_release_holds_its_weight(staff: dict[str, Any], release_clock: FakeClock) -> None:
    release = new_candidate(staff["operator"])
    services.release_pause(release_id=release.pk, user=staff["operator"], reason="hold")
    release_clock.advance(minutes=600)
    decisions.release_tick()
    release.refresh_from_db()
    assert release.weight == 10
    services.release_resume(release_id=release.pk, user=staff["operator"], reason="go")
    release_clock.advance(minutes=119)
    decisions.release_tick()
    release.refresh_from_db()
    assert release.weight == 10  # a full interval after resuming, not at once
    release_clock.advance(minutes=1)
    decisions.release_tick()
    release.refresh_from_db()
    assert release.weight == 15


def test_rollback_returns_every_session_to_stable(staff: dict[str, Any]) -> None:
    from releases.assignment import release_assign

    release = new_candidate(staff["operator"])
    services.release_weight_set(
        release_id=release.pk, weight=100, user=staff["operator"], reason="all"
    )
    assert release_assign(session="abc").variant == "candidate"
    services.release_rollback(release_id=release.pk, user=staff["operator"], reason="bad")
    release.refresh_from_db()
    assert release.status == Release.Status.ROLLED_BACK and release.weight == 0
    assert release_assign(session="abc").variant == "stable"
    with pytest.raises(ReleaseError):
        services.release_promote(release_id=release.pk, user=staff["operator"], reason="too late")


def test_beat_runs_the_tick_task(settings: Any) -> None:
    """Celery beat's schedule names the task, and the task is registered with the app."""
    from config.celery import app

    app.loader.import_default_modules()  # what a worker does at start: autodiscovery

    entry = settings.CELERY_BEAT_SCHEDULE["release-tick"]
    assert entry["task"] == "releases.release_tick"
    assert entry["schedule"] == settings.TIERDESK_RELEASE_TICK_S
    assert "releases.release_tick" in app.tasks and "releases.release_check" in app.tasks
    # Run as the worker would: with no candidate it does nothing and says so.
    assert app.tasks["releases.release_tick"]() == {"outcome": "no_candidate"}


# Stand-in statuses: S a breach with strong evidence (p far below alpha / the planned
# evaluations), B a breach at alpha only, P a pass, N not enough data.
S, B, P, N = "strong", "breach", "pass", "insufficient"


def _evaluation(statuses: dict[str, str]) -> Any:
    from releases.guardrails import BREACH, Check, Evaluation

    def check(name: str, status: str) -> Check:
        if status == S:
            return Check(name, BREACH, p_value=1e-12, alpha=0.01, margin=True)
        if status == B:
            return Check(name, BREACH, p_value=0.005, alpha=0.01, margin=True)
        if status == P:
            return Check(name, status, p_value=0.5, alpha=0.01)
        return Check(name, status)

    return Evaluation([check(name, status) for name, status in statuses.items()])


def _seeing(statuses: dict[str, str], later: dict[str, str] | None = None) -> Any:
    """A stand-in for ``release_evaluate`` whose checks come out with these statuses;
    ``later``: what the evaluation on the minutes after a breach (``after=``) sees."""
    evaluation, fresh = _evaluation(statuses), _evaluation(later or {})
    calls.clear()

    def evaluate(**kwargs: Any) -> Any:
        calls.append(kwargs.get("after"))
        return fresh if kwargs.get("after") is not None else evaluation

    return evaluate


calls: list[Any] = []


def _beats(
    monkeypatch: Any,
    release_clock: FakeClock,
    statuses: list[dict[str, str] | tuple[dict[str, str], dict[str, str]]],
) -> list[dict[str, Any]]:
    """One beat per item, a minute apart, with the guardrail seeing exactly these
    check statuses (and, for a pair, these on the minutes after a pending breach; the
    statistics are tests/releases/test_guardrails.py's)."""
    outcomes = []
    for item in statuses:
        regular, later = item if isinstance(item, tuple) else (item, None)
        monkeypatch.setattr(decisions, "release_evaluate", _seeing(regular, later))
        release_clock.advance(minutes=1)
        outcomes.append(decisions.release_tick())
    return outcomes


def test_strong_evidence_in_a_row_rolls_back_and_no_data_does_not_reset(
    staff: dict[str, Any], release_clock: FakeClock, monkeypatch: Any
) -> None:
    """The fast path: a breach far beyond alpha / the planned evaluations, twice among
    the evaluations where the check had its sample. A beat where the latency sample
    dipped below the minimum while the error check passed neither counts nor resets
    (counted as a pass, it would wipe the breach)."""
    release = new_candidate(staff["operator"])
    outcomes = _beats(
        monkeypatch,
        release_clock,
        [
            {"latency:all": S, "errors": P, "csat": P},
            {"latency:all": N, "errors": P, "csat": P},
            {"latency:all": S, "errors": P, "csat": P},
        ],
    )
    assert [o["outcome"] for o in outcomes] == ["breach", "pass", "rollback"]
    release.refresh_from_db()
    assert release.status == Release.Status.ROLLED_BACK
    decisions = list(GuardrailDecision.objects.filter(release=release).order_by("at", "id"))
    assert [d.numbers["streaks"] for d in decisions] == [
        {"latency:all": 1},
        {"latency:all": 1},
        {"latency:all": 2},
    ]
    # The default release: 10% + 5% every 2 h to 50%, held 2 h, a beat a minute.
    assert decisions[0].numbers["planned_evaluations"] == 1080
    assert decisions[1].summary.startswith("breach latency:all waiting for confirmation")
    assert "latency:all strong 1 of 2" in decisions[1].summary
    rollback = decisions[-1]
    assert rollback.numbers["rule"] == {"check": "latency:all", "path": "strong", "breaches": 2}
    assert rollback.summary.startswith("rollback rule: latency:all breached at p < 9.3e-06")
    reason = ReleaseEvent.objects.get(release=release, action="rollback").reason
    assert f"decision #{rollback.pk}" in reason and "rollback rule: latency:all" in reason


def test_a_breach_at_alpha_rolls_back_only_when_later_data_confirms_it(
    staff: dict[str, Any], release_clock: FakeClock, monkeypatch: Any
) -> None:
    """The confirmation path: overlapping windows breaching again are the same evidence
    looked at again, so a breach at alpha waits for the first evaluation on the minutes
    after it that has the sample; a pass there clears it, a breach rolls back."""
    release = new_candidate(staff["operator"])
    first = release_clock.at
    outcomes = _beats(
        monkeypatch,
        release_clock,
        [
            {"latency:all": B, "errors": P},  # minute 1: waits
            ({"latency:all": B, "errors": P}, {"latency:all": N}),  # later data: too few
            ({"latency:all": B, "errors": P}, {"latency:all": P}),  # later data: fine
        ],
    )
    assert [o["outcome"] for o in outcomes] == ["breach", "breach", "breach"]
    decisions = list(GuardrailDecision.objects.filter(release=release).order_by("at", "id"))
    minute_1 = (first + timedelta(minutes=1)).isoformat()
    minute_3 = (first + timedelta(minutes=3)).isoformat()
    assert [d.numbers["waiting"] for d in decisions] == [
        {"latency:all": minute_1},
        {"latency:all": minute_1},  # a breach of a waiting check does not restart it
        {"latency:all": minute_3},  # cleared by the later data, then a new breach
    ]
    assert calls == [None, datetime.fromisoformat(minute_1)]  # the beat's, the later data's
    # Now the minutes after minute 3 breach too: confirmed.
    outcomes = _beats(
        monkeypatch, release_clock, [({"latency:all": P, "errors": P}, {"latency:all": B})]
    )
    assert outcomes[0]["outcome"] == "rollback"
    release.refresh_from_db()
    assert release.status == Release.Status.ROLLED_BACK
    rollback = GuardrailDecision.objects.get(release=release, outcome="rollback")
    assert rollback.numbers["rule"] == {
        "check": "latency:all",
        "path": "confirmed",
        "after": minute_3,
    }
    assert [c["after"] for c in rollback.numbers["confirmation_checks"]] == [minute_3]
    assert "and again on the minutes after it" in rollback.summary


def test_a_pass_with_data_resets_and_other_checks_do_not_add_up(
    staff: dict[str, Any], release_clock: FakeClock, monkeypatch: Any
) -> None:
    release = new_candidate(staff["operator"])
    later = {"latency:all": N, "errors": N}
    outcomes = _beats(
        monkeypatch,
        release_clock,
        [
            ({"latency:all": S, "errors": P}, later),
            ({"latency:all": P, "errors": P}, later),  # the check had data and passed
            ({"latency:all": S, "errors": P}, later),
            ({"latency:all": P, "errors": S}, later),  # a different check's first breach
            ({"latency:all": P, "errors": P}, later),
        ],
    )
    assert [o["outcome"] for o in outcomes] == ["breach", "pass", "breach", "breach", "pass"]
    release.refresh_from_db()
    assert release.status == Release.Status.RUNNING
    # Nothing strong is pending; both breaches still wait for the later data.
    last = GuardrailDecision.objects.filter(release=release).order_by("-at", "-id").first()
    assert last is not None and last.numbers["streaks"] == {}
    assert set(last.numbers["waiting"]) == {"latency:all", "errors"}
    assert release.breach_streak == 1


def test_a_second_evaluation_in_the_same_minute_counts_once(
    staff: dict[str, Any], release_clock: FakeClock, monkeypatch: Any
) -> None:
    new_candidate(staff["operator"])
    monkeypatch.setattr(decisions, "release_evaluate", _seeing({"latency:all": S, "errors": P}))
    release_clock.advance(minutes=1)
    assert decisions.release_tick()["outcome"] == "breach"
    assert decisions.release_tick()["outcome"] == "breach"  # a duplicate beat
    release_clock.advance(minutes=1)
    assert decisions.release_tick()["outcome"] == "rollback"


def test_a_pending_breach_holds_the_promotion(
    staff: dict[str, Any], release_clock: FakeClock, monkeypatch: Any, settings: Any
) -> None:
    settings.TIERDESK_RELEASE_PROMOTE_HOLD_MIN = 0
    release = new_candidate(staff["operator"])
    services.release_weight_set(
        release_id=release.pk, weight=50, user=staff["operator"], reason="at the ceiling"
    )
    # latency:L1 breached once at alpha; the minutes after it lack the sample: neither
    # confirmed nor cleared.
    outcomes = _beats(
        monkeypatch,
        release_clock,
        [
            {"latency:all": P, "latency:L1": B, "errors": P},
            ({"latency:all": P, "errors": P}, {"latency:L1": N}),
        ],
    )
    assert [o["outcome"] for o in outcomes] == ["breach", "pass"]
    # The next beat would promote but for the pending breach; once latency:L1 has its
    # sample on the later minutes and passes, it does.
    outcomes = _beats(
        monkeypatch,
        release_clock,
        [({"latency:all": P, "latency:L1": P, "errors": P}, {"latency:L1": P})],
    )
    assert outcomes[0]["outcome"] == "promote"
