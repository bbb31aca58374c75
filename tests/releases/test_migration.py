"""The gray-release models moved from the routing app to their own releases app.
A database filled in the old layout keeps every row, every foreign key and every
permission granted on these models.

The test unapplies the move (releases 0001 and what depends on it), fills the tables
through the old layout's models, applies the move again and reads through today's
models. Real PostgreSQL, real migrations.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("releases", None)]  # unapplies chatbot 0004 and routing 0004 with it


def _migrate(targets: Sequence[tuple[str, str | None]]) -> Any:
    """Migrate to ``targets``; the models as they are there."""
    executor = MigrationExecutor(connection)
    state = executor.migrate(list(targets))  # (app, None) unapplies the whole app
    return state.apps


def _latest() -> list[tuple[str, str | None]]:
    return list(MigrationExecutor(connection).loader.graph.leaf_nodes())


def _fill_old_layout(apps: Any) -> dict[str, int]:
    Release = apps.get_model("routing", "Release")
    ReleaseEvent = apps.get_model("routing", "ReleaseEvent")
    GuardrailDecision = apps.get_model("routing", "GuardrailDecision")
    MetricMinute = apps.get_model("routing", "MetricMinute")
    Conversation = apps.get_model("chatbot", "Conversation")
    Message = apps.get_model("chatbot", "Message")
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    ContentType = apps.get_model("contenttypes", "ContentType")

    stable = Release.objects.create(name="stable-old", is_stable=True, status="promoted")
    candidate = Release.objects.create(
        name="candidate-old", status="rolled_back", config={"roles": {"L1": "fast"}}
    )
    now = timezone.now()
    ReleaseEvent.objects.create(
        release=candidate, at=now, actor="system:guardrail", action="rollback", reason="latency"
    )
    GuardrailDecision.objects.create(
        release=candidate, stable=stable, at=now, outcome="rollback", summary="latency"
    )
    MetricMinute.objects.create(release=candidate, variant="candidate", tier="L1", minute=now)
    conversation = Conversation.objects.create()
    reply = Message.objects.create(
        conversation=conversation, role="bot", status="complete", release=candidate
    )
    # The operators' grant, on the old content type.
    content_type = ContentType.objects.get(app_label="routing", model="release")
    permission = Permission.objects.get(content_type=content_type, codename="operate_release")
    group = Group.objects.create(name="old-layout operators")
    group.permissions.add(permission)
    return {"candidate": candidate.pk, "stable": stable.pk, "reply": reply.pk, "group": group.pk}


def test_moving_releases_keeps_rows_foreign_keys_and_permissions() -> None:
    latest = _latest()
    old_apps = _migrate(BEFORE)
    with connection.cursor() as cursor:
        tables = set(connection.introspection.table_names(cursor))
    assert "routing_release" in tables and "releases_release" not in tables
    ids = _fill_old_layout(old_apps)

    _migrate(latest)

    from django.contrib.auth.models import Group

    from chatbot.models import Message
    from releases.models import GuardrailDecision, MetricMinute, Release, ReleaseEvent

    with connection.cursor() as cursor:
        tables = set(connection.introspection.table_names(cursor))
    assert {"releases_release", "releases_releaseevent", "releases_metricminute"} <= tables
    assert not {t for t in tables if t.startswith("routing_") and "release" in t}
    candidate = Release.objects.get(pk=ids["candidate"])
    assert candidate.name == "candidate-old" and candidate.config == {"roles": {"L1": "fast"}}
    assert Release.objects.get(pk=ids["stable"]).is_stable
    assert [e.action for e in ReleaseEvent.objects.filter(release=candidate)] == ["rollback"]
    decision = GuardrailDecision.objects.get(release=candidate)
    assert decision.stable_id == ids["stable"] and decision.outcome == "rollback"
    assert MetricMinute.objects.filter(release=candidate).count() == 1
    assert Message.objects.get(pk=ids["reply"]).release_id == candidate.pk
    # The grant follows the model: the group can still operate releases.
    group = Group.objects.get(pk=ids["group"])
    assert list(group.permissions.values_list("content_type__app_label", "codename")) == [
        ("releases", "operate_release")
    ]
    # New rows get fresh ids from the moved tables' sequences.
    fresh = Release.objects.create(name="after-move")
    assert fresh.pk > ids["candidate"]
