"""The operator console and /metrics: who gets in, the confirmation step, the charts."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from releases import decisions, services
from releases.metrics import reply_record
from releases.models import Release, ReleaseEvent
from tests.releases.conftest import FakeClock
from tests.releases.test_metrics import facts

pytestmark = pytest.mark.django_db
CONSOLE = "/operators/"


def client_for(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def running(staff: dict[str, Any]) -> Release:
    release = services.release_create(name="cand", config={}, user=staff["operator"], reason="x")
    return services.release_start(release_id=release.pk, user=staff["operator"], reason="go")


def test_shoppers_and_strangers_get_no_console_and_no_metrics(
    client: Client, staff: dict[str, Any], settings: Any
) -> None:
    settings.TIERDESK_METRICS_TOKEN = "s3cret-token"
    release = running(staff)
    # A shopper is an anonymous visitor to Django (the widget uses shop tokens).
    response = client.get(CONSOLE)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert (
        client.post(f"/operators/releases/{release.pk}/weight", {"weight": 90}).status_code == 302
    )
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    # Staff outside the operators group: 403 everywhere, and the weight never moved.
    for name in ("support", "nobody"):
        other = client_for(staff[name])
        assert other.get(CONSOLE).status_code == 403
        assert other.get("/metrics").status_code == 403
        denied = other.post(
            f"/operators/releases/{release.pk}/weight",
            {"weight": 90, "reason": "more", "confirmed": "on"},
        )
        assert denied.status_code == 403
    release.refresh_from_db()
    assert release.weight == 10
    # Prometheus with the token gets the exposition.
    ok = client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-token")
    assert ok.status_code == 200 and b"tierdesk_release_weight_percent" in ok.content


def test_support_admins_edit_content_but_not_releases(staff: dict[str, Any]) -> None:
    support = client_for(staff["support"])
    assert support.get("/admin/knowledge/document/add/").status_code == 200
    assert support.get("/admin/routing/intent/").status_code == 200
    assert support.get("/admin/releases/release/").status_code == 403
    assert support.get("/admin/releases/release/add/").status_code == 403


def test_operators_operate_releases_but_not_the_knowledge_base_unless_granted(
    staff: dict[str, Any],
) -> None:
    operator = client_for(staff["operator"])
    assert operator.get("/admin/releases/release/").status_code == 200
    assert operator.get("/admin/knowledge/document/add/").status_code == 403
    assert operator.get("/admin/routing/intent/add/").status_code == 403
    staff["operator"].user_permissions.add(
        Permission.objects.get(content_type__app_label="knowledge", codename="add_document")
    )
    operator = client_for(type(staff["operator"]).objects.get(pk=staff["operator"].pk))
    assert operator.get("/admin/knowledge/document/add/").status_code == 200


def test_weight_change_asks_for_confirmation_then_is_audited(staff: dict[str, Any]) -> None:
    release = running(staff)
    operator = client_for(staff["operator"])
    url = f"/operators/releases/{release.pk}/weight"
    confirm = operator.post(url, {"weight": 30, "reason": "metrics are flat"})
    assert confirm.status_code == 200
    text = confirm.content.decode()
    assert "buckets 10-29 (20% of sessions) move to the candidate" in text
    release.refresh_from_db()
    assert release.weight == 10  # nothing happens before the confirmation
    done = operator.post(url, {"weight": 30, "reason": "metrics are flat", "confirmed": "on"})
    assert done.status_code == 302
    release.refresh_from_db()
    assert release.weight == 30
    event = ReleaseEvent.objects.get(release=release, action="weight")
    assert (event.actor, event.reason, event.before["weight"], event.after["weight"]) == (
        "operator",
        "metrics are flat",
        10,
        30,
    )
    # A refused action (a second start) is reported, not applied.
    page = operator.post(
        f"/operators/releases/{release.pk}/start",
        {"reason": "again", "confirmed": "on"},
        follow=True,
    )
    assert "only a draft can start" in page.content.decode()


def test_csrf_protects_the_console_and_the_admin(staff: dict[str, Any]) -> None:
    """A logged-in operator's browser, tricked into posting from another site, changes
    nothing: without the CSRF token the console and the admin answer 403. With the
    token from their own pages, the same posts go through."""
    release = running(staff)
    operator = Client(enforce_csrf_checks=True)
    operator.force_login(staff["operator"])
    url = f"/operators/releases/{release.pk}/weight"
    forged = {"weight": 40, "reason": "forged", "confirmed": "on"}
    assert operator.post(url, forged).status_code == 403
    admin_change = f"/admin/releases/release/{release.pk}/delete/"
    assert operator.post(admin_change, {"post": "yes"}).status_code == 403
    release.refresh_from_db()
    assert release.weight == 10 and Release.objects.filter(pk=release.pk).exists()

    assert operator.get(CONSOLE).status_code == 200  # the page sets the CSRF cookie
    token = operator.cookies["csrftoken"].value
    ok = operator.post(url, {**forged, "reason": "agreed", "csrfmiddlewaretoken": token})
    assert ok.status_code == 302
    release.refresh_from_db()
    assert release.weight == 40


def test_console_shows_status_charts_and_decisions(
    staff: dict[str, Any], release_clock: FakeClock
) -> None:
    release = running(staff)
    stable = Release.objects.get(is_stable=True)
    for i in range(30):
        release_clock.advance(minutes=2)
        reply_record(facts(release_id=stable.pk, first_chunk_ms=200.0 + i))
        reply_record(
            facts(release_id=release.pk, variant="candidate", tier="L2", first_chunk_ms=600.0)
        )
    decisions.release_tick()
    page = client_for(staff["operator"]).get(CONSOLE + "?hours=6")
    html = page.content.decode()
    assert page.status_code == 200
    assert 'data-weight="10"' in html and "cand" in html
    for chart in (
        "p95-variant",
        "errors-variant",
        "csat-variant",
        "share-variant",
        "p95-tier",
        "share-tier",
        "cost",
    ):
        assert f'id="chart-{chart}"' in html
    assert html.count("<polyline") >= 10  # stable and candidate lines, tiers, cost lines
    assert "not enough data" in html  # the decision is shown with its numbers
    assert "Cost saving against sending everything to L3" in html


def test_releases_demo_history_runs_on_the_default_guardrails() -> None:
    """The demo command replays traffic through the real services with the default
    settings (200 replies minimum, alpha 0.01): its slower trial candidate is rolled
    back by the guardrail, and the second one is left running for the console."""
    from django.core.management import call_command

    from releases.models import GuardrailDecision

    call_command("releases_demo", hours=2, stdout=io.StringIO())
    trial = Release.objects.get(name="fast-q8-trial")
    assert trial.status == Release.Status.ROLLED_BACK
    rollback = GuardrailDecision.objects.get(release=trial, outcome="rollback")
    assert any(
        c["name"] == "latency:L1" and c["status"] == "breach" for c in rollback.numbers["checks"]
    )
    running_now = Release.objects.get(status=Release.Status.RUNNING)
    assert running_now.name == "templates-v2" and running_now.weight >= 10
    assert ReleaseEvent.objects.filter(release=trial, actor="system:guardrail").count() == 2


def test_releases_report_prints_the_saving_ratio(
    staff: dict[str, Any], release_clock: FakeClock
) -> None:
    import json

    from django.core.management import call_command

    release = running(staff)
    stable = Release.objects.get(is_stable=True)
    # A templated L1 reply (free) and an L3 reply on the baseline model (full price).
    reply_record(facts(release_id=stable.pk, model="", prompt_tokens=0, completion_tokens=0))
    reply_record(facts(release_id=release.pk, variant="candidate", tier="L3", model="gpt-4o-mini"))
    out = io.StringIO()
    call_command("releases_report", hours=1, stdout=out)
    report = json.loads(out.getvalue())
    assert report["candidate"] == {"name": "cand", "weight": 10}
    assert report["by_variant"]["stable"]["cost"] == 0.0
    assert report["by_variant"]["stable"]["saving_ratio"] == 1.0
    assert 0.0 < report["all"]["saving_ratio"] < 1.0
    assert set(report["by_tier"]) == {"L1", "L3"}


def test_system_written_rows_are_read_only_in_the_admin_and_the_audit_is_never_deleted(
    admin_user: Any, rf: Any
) -> None:
    """Even a superuser can't add or edit ratings, bot verdicts, trained classifiers or
    the release audit; only the audit is kept from deletion too."""
    from django.contrib import admin as django_admin

    from chatbot.models import BotCheck, Feedback
    from releases.models import GuardrailDecision
    from routing.models import ClassifierModel

    request = rf.get("/admin/")
    request.user = admin_user
    for model, deletable in (
        (Feedback, True),
        (BotCheck, True),
        (ClassifierModel, True),
        (ReleaseEvent, False),
        (GuardrailDecision, False),
    ):
        model_admin = django_admin.site._registry[model]
        assert not model_admin.has_add_permission(request), model
        assert not model_admin.has_change_permission(request), model
        assert model_admin.has_delete_permission(request) is deletable, model
