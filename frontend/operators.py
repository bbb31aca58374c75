"""The operator console and the Prometheus endpoint (thin views over releases).

Who may do what (releases/permissions.py): the console needs
``releases.view_release_metrics`` (the "operators" group); operating a release needs
``releases.operate_release``; creating a draft ``releases.add_release``. Shoppers are
never Django users, so they get the login page or a 403, never data.

Every operation is two POSTs: the first shows what will happen (which buckets move,
how many sessions) and asks for confirmation; the second, with ``confirmed=1``,
does it. Both carry the reason that goes into the audit trail.
"""

from __future__ import annotations

import hmac
from datetime import timedelta
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop
from django.views.decorators.http import require_GET, require_POST

from chatbot.handoff import handoff_figures, handoff_series
from releases import clock
from releases import services as releases
from releases.assignment import buckets_moved
from releases.metrics import Window
from releases.models import Release
from releases.selectors import dashboard, release_overview

from .charts import fmt_minutes, fmt_ms, fmt_pct, fmt_usd, line_chart

# msgids too: the confirmation page names the action in the operator's language.
ACTIONS = (
    gettext_noop("start"),
    gettext_noop("weight"),
    gettext_noop("pause"),
    gettext_noop("resume"),
    gettext_noop("promote"),
    gettext_noop("rollback"),
)
HOURS_CHOICES = (1, 6, 24, 72, 168)


class ActionForm(forms.Form):
    reason = forms.CharField(max_length=2000, strip=True)
    weight = forms.IntegerField(min_value=0, max_value=100, required=False)
    confirmed = forms.BooleanField(required=False)


class NewReleaseForm(forms.Form):
    name = forms.SlugField(max_length=64)
    description = forms.CharField(required=False, max_length=2000)
    config = forms.JSONField(required=False, initial=dict)
    reason = forms.CharField(max_length=2000, strip=True)


def _hours(value: str | None) -> int:
    """The console's time window from a query or form value (6 h if absent or odd)."""
    try:
        hours = int(value or "6")
    except ValueError:
        return 6
    return hours if hours in HOURS_CHOICES else 6


def _back(request: HttpRequest) -> HttpResponseRedirect:
    """Back to the console in the window the operator was looking at."""
    hours = _hours(request.POST.get("hours"))
    return HttpResponseRedirect(f"{reverse('operators:console')}?hours={hours}")


def _labels(series: dict[str, Any]) -> dict[str, str]:
    """Legend text for series whose names are msgids (gettext_noop at their source);
    variant and tier names are not in the catalogue and stay as they are."""
    return {name: _(name) for name in series}


def _charts(board: Any) -> list[Any]:
    c = board.charts
    return [
        line_chart(
            c["p95_variant"],
            title=_("p95 first chunk, per variant"),
            fmt=fmt_ms,
            chart_id="chart-p95-variant",
        ),
        line_chart(
            c["errors_variant"],
            title=_("Error rate, per variant"),
            fmt=fmt_pct,
            chart_id="chart-errors-variant",
        ),
        line_chart(
            c["csat_variant"],
            title=_("CSAT (satisfied ratings), per variant"),
            fmt=fmt_pct,
            chart_id="chart-csat-variant",
            y_max=1.0,
        ),
        line_chart(
            c["share_variant"],
            title=_("Traffic share, per variant"),
            fmt=fmt_pct,
            chart_id="chart-share-variant",
            y_max=1.0,
        ),
        line_chart(
            c["p95_tier"],
            title=_("p95 first chunk, per tier"),
            fmt=fmt_ms,
            chart_id="chart-p95-tier",
        ),
        line_chart(
            c["share_tier"],
            title=_("Traffic share, per tier"),
            fmt=fmt_pct,
            chart_id="chart-share-tier",
            y_max=1.0,
        ),
        line_chart(
            c["cost"],
            title=_("Cumulative cost vs all-L3 baseline"),
            fmt=fmt_usd,
            chart_id="chart-cost",
            labels=_labels(c["cost"]),
        ),
    ]


def _handoff(hours: int) -> dict[str, Any]:
    """The human handoff over the console's range: figures and two charts (docs/desk.md)."""
    until = clock.now()
    since = until - timedelta(hours=hours)
    f = handoff_figures(since=since)
    series = handoff_series(since=since, until=until)
    rate, first = "intervention rate", "first human reply (min)"
    return {
        "rows": [
            (_("Conversations"), str(f.conversations)),
            (_("Handed to a person"), str(f.handed_off)),
            (_("Human intervention rate"), _pct(f.intervention_rate)),
            (_("Time to first human reply (mean)"), _secs(f.first_reply_s)),
            (_("Handle time (mean, claim to resolve)"), _secs(f.handle_s)),
            (_("CSAT bot (%(n)s ratings)") % {"n": f.ratings_bot}, _pct(f.csat_bot)),
            (_("CSAT human (%(n)s ratings)") % {"n": f.ratings_human}, _pct(f.csat_human)),
            (_("Waiting now / agents online"), f"{f.queued_now} / {f.agents_online}"),
        ],
        "charts": [
            line_chart(
                {rate: series[rate]},
                title=_("Human intervention rate"),
                fmt=fmt_pct,
                chart_id="chart-handoff-rate",
                labels={rate: _(rate)},
                y_max=1.0,
            ),
            line_chart(
                {first: series[first]},
                title=_("Time to first human reply (min)"),
                fmt=fmt_minutes,
                chart_id="chart-handoff-first-reply",
                labels={first: _(first)},
            ),
        ],
    }


def _secs(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.0f} s" if value < 120 else f"{value / 60:.1f} min"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f}%"


def _ms(value: float | None) -> str:
    return "–" if value is None else fmt_ms(value)


def _row(name: str, w: Window) -> list[str]:
    return [
        name,
        str(w.replies),
        _ms(w.p(0.5)),
        _ms(w.p(0.95)),
        _pct(w.error_rate),
        _pct(w.fallback_rate),
        _pct(w.model_phrased_share),
        str(w.handoffs),
        str(w.ratings),
        _pct(w.csat),
        f"{w.prompt_tokens + w.completion_tokens:,}",
        fmt_usd(w.cost),
        _pct(w.saving_ratio),
    ]


@require_GET
@login_required
@permission_required("releases.view_release_metrics", raise_exception=True)
def console(request: HttpRequest) -> HttpResponse:
    hours = _hours(request.GET.get("hours"))
    overview = release_overview()
    board = dashboard(until=clock.now(), hours=hours)
    drafts = [r for r in overview.releases if r.status == Release.Status.DRAFT]
    context = {
        "overview": overview,
        "board": board,
        "charts": _charts(board),
        "variant_rows": [_row(name, w) for name, w in sorted(board.by_variant.items())],
        "tier_rows": [_row(name, w) for name, w in sorted(board.by_tier.items())],
        "total": {
            "saving": _pct(board.total.saving_ratio),
            "cost": fmt_usd(board.total.cost),
            "baseline_cost": fmt_usd(board.total.baseline_cost),
            # Admission control: of the replies that planned a model, those a model wrote.
            "model_phrased": _pct(board.total.model_phrased_share),
            "model_turns": board.total.model_turns,
            "degraded": board.total.degraded,
        },
        "drafts": drafts,
        "handoff": _handoff(hours),
        "hours": hours,
        "hours_choices": HOURS_CHOICES,
        "can_operate": request.user.has_perm("releases.operate_release"),
        "can_create": request.user.has_perm("releases.add_release"),
        "new_form": NewReleaseForm(),
        "schedule": {
            "start": settings.TIERDESK_RELEASE_START_WEIGHT,
            "step": settings.TIERDESK_RELEASE_STEP_PCT,
            "interval": settings.TIERDESK_RELEASE_STEP_INTERVAL_MIN,
            "max": settings.TIERDESK_RELEASE_MAX_WEIGHT,
        },
    }
    return render(request, "frontend/operators/console.html", context)


def _effect(release: Release, action: str, weight: int | None) -> str:
    """What the action will do, in the words the confirmation page shows."""
    s = settings
    if action == "start":
        return _(
            "Start %(name)s as the candidate at %(start)s%% of sessions, then +%(step)s%% "
            "every %(interval)s minutes up to %(max)s%%, watched by the guardrails."
        ) % {
            "name": release.name,
            "start": s.TIERDESK_RELEASE_START_WEIGHT,
            "step": s.TIERDESK_RELEASE_STEP_PCT,
            "interval": s.TIERDESK_RELEASE_STEP_INTERVAL_MIN,
            "max": s.TIERDESK_RELEASE_MAX_WEIGHT,
        }
    if action == "weight" and weight is not None:
        moved = buckets_moved(before=release.weight, after=weight)
        if not len(moved):
            return _("%(name)s stays at %(weight)s%%: nothing moves.") % {
                "name": release.name,
                "weight": weight,
            }
        params = {
            "name": release.name,
            "before": release.weight,
            "after": weight,
            "first": moved.start,
            "last": moved.stop - 1,
            "share": len(moved),
        }
        if weight > release.weight:
            return (
                _(
                    "Set %(name)s from %(before)s%% to %(after)s%%: buckets %(first)s-%(last)s "
                    "(%(share)s%% of sessions) move to the candidate. Every other session "
                    "keeps its variant."
                )
                % params
            )
        return (
            _(
                "Set %(name)s from %(before)s%% to %(after)s%%: buckets %(first)s-%(last)s "
                "(%(share)s%% of sessions) move back to the stable release. Every other "
                "session keeps its variant."
            )
            % params
        )
    params = {"name": release.name, "weight": release.weight}
    if action == "pause":
        return (
            _("Pause the schedule of %(name)s at %(weight)s%%. The guardrails keep watching.")
            % params
        )
    if action == "resume":
        return _("Resume the schedule of %(name)s; the next step is one interval away.") % params
    if action == "promote":
        return _("Promote %(name)s: it becomes the stable release for every session.") % params
    if action == "rollback":
        return _("Roll back %(name)s: every session returns to the stable release.") % params
    return action


def _run(
    release: Release, action: str, weight: int | None, request: HttpRequest, reason: str
) -> str:
    kwargs: dict[str, Any] = {"release_id": release.pk, "user": request.user, "reason": reason}
    if action == "start":
        done = releases.release_start(**kwargs)
        return _("%(name)s is running at %(weight)s%%.") % {
            "name": done.name,
            "weight": done.weight,
        }
    if action == "weight":
        if weight is None:
            raise releases.ReleaseError("give the new weight")
        done = releases.release_weight_set(weight=weight, **kwargs)
        return _("%(name)s is at %(weight)s%%.") % {"name": done.name, "weight": done.weight}
    if action == "pause":
        return _("%(name)s is paused.") % {"name": releases.release_pause(**kwargs).name}
    if action == "resume":
        return _("%(name)s resumed.") % {"name": releases.release_resume(**kwargs).name}
    if action == "promote":
        name = releases.release_promote(**kwargs).name
        return _("%(name)s is the stable release now.") % {"name": name}
    if action == "rollback":
        return _("%(name)s was rolled back.") % {"name": releases.release_rollback(**kwargs).name}
    raise releases.ReleaseError(f"unknown action {action!r}")


def _action_form_problems(form: ActionForm, release: Release) -> list[str]:
    """One message per field that is missing or out of range, quoting this release's
    own ceiling: the form's bound of 100 is only the wire check."""
    problems = []
    if "reason" in form.errors:
        problems.append(_("Say why: the reason is kept in the audit trail."))
    if "weight" in form.errors:
        problems.append(
            _("Give a weight between 0 and %(maximum)s%%.") % {"maximum": release.max_weight}
        )
    return problems


@require_POST
@login_required
def release_action(request: HttpRequest, release_id: int, action: str) -> HttpResponse:
    if not request.user.has_perm("releases.operate_release"):
        raise PermissionDenied("operating a release needs the operators' permission")
    release = get_object_or_404(Release, pk=release_id)
    back = _back(request)
    if action not in ACTIONS:
        messages.error(request, f"Unknown action {action!r}.")
        return back
    form = ActionForm(request.POST)
    if not form.is_valid():
        for problem in _action_form_problems(form, release):
            messages.error(request, problem)
        return back
    weight = form.cleaned_data.get("weight")
    reason = form.cleaned_data["reason"]
    if action == "weight" and weight is not None and weight > release.max_weight:
        # The schedule's ceiling holds for people too: all sessions means promoting,
        # which has its own confirmation and audit entry.
        messages.error(
            request,
            _(
                "%(weight)s%% is above this release's maximum of %(max)s%% "
                "(TIERDESK_RELEASE_MAX_WEIGHT): nothing changed. To serve every session, "
                "promote the candidate."
            )
            % {"weight": weight, "max": release.max_weight},
        )
        return back
    if not form.cleaned_data["confirmed"]:
        return render(
            request,
            "frontend/operators/confirm.html",
            {
                "release": release,
                "action": action,
                "weight": weight,
                "reason": reason,
                "effect": _effect(release, action, weight),
                "hours": _hours(request.POST.get("hours")),
            },
        )
    try:
        message = _run(release, action, weight, request, reason)
    except releases.ReleaseError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, message)
    return back


@require_POST
@login_required
@permission_required("releases.add_release", raise_exception=True)
def release_new(request: HttpRequest) -> HttpResponse:
    form = NewReleaseForm(request.POST)
    if not form.is_valid():
        errors = "; ".join(f"{k}: {' '.join(str(e) for e in v)}" for k, v in form.errors.items())
        messages.error(request, f"The draft was not created: {errors}")
    else:
        try:
            release = releases.release_create_validated(
                name=form.cleaned_data["name"],
                description=form.cleaned_data["description"],
                config=form.cleaned_data["config"] or {},
                user=request.user,
                reason=form.cleaned_data["reason"],
            )
        except releases.ReleaseError as exc:
            messages.error(request, f"The draft was not created: {exc}")
        else:
            messages.success(request, f"Draft {release.name} created.")
    return _back(request)


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus exposition: a bearer token (TIERDESK_METRICS_TOKEN) or a signed-in
    user with the console permission. Anyone else gets 401/403 and no numbers."""
    from prometheus_client import CONTENT_TYPE_LATEST

    from releases.prom import exposition

    token = settings.TIERDESK_METRICS_TOKEN
    header = request.headers.get("Authorization", "")
    if header.startswith("Bearer "):
        if not token or not hmac.compare_digest(header[7:].encode(), token.encode()):
            return _unauthorized()
    elif not request.user.is_authenticated:
        return _unauthorized()
    elif not request.user.has_perm("releases.view_release_metrics"):
        raise PermissionDenied("metrics are for operators")
    return HttpResponse(exposition(), content_type=CONTENT_TYPE_LATEST)


def _unauthorized() -> HttpResponse:
    response = HttpResponse("credentials required\n", status=401, content_type="text/plain")
    response["WWW-Authenticate"] = 'Bearer realm="tierdesk-metrics"'
    return response
