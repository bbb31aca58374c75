"""Issue #18 item 11: the operator console's rough edges (weight ceiling, JSON
configuration, the time window kept across actions, dated chart axes)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.test import Client

from frontend.charts import fmt_minutes, fmt_pct, line_chart
from releases import services
from releases.models import Release
from tests.releases.conftest import release_clock, staff  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db
CONSOLE = "/operators/"


def operator(staff: dict[str, Any]) -> Client:  # noqa: F811
    client = Client()
    client.force_login(staff["operator"])
    return client


def running(staff: dict[str, Any], config: dict[str, Any] | None = None) -> Release:  # noqa: F811
    release = services.release_create(
        name="cand", config=config or {}, user=staff["operator"], reason="x"
    )
    return services.release_start(release_id=release.pk, user=staff["operator"], reason="go")


def test_a_weight_above_the_maximum_is_refused_with_a_reason(
    staff: dict[str, Any],  # noqa: F811
    settings: Any,
) -> None:
    release = running(staff)
    assert release.max_weight == settings.TIERDESK_RELEASE_MAX_WEIGHT == 50
    client = operator(staff)
    url = f"/operators/releases/{release.pk}/weight"
    # Neither the confirmation page nor the confirmed post moves it.
    for confirmed in ("", "on"):
        done = client.post(
            url,
            {"weight": 80, "reason": "more", "confirmed": confirmed, "hours": "72"},
            follow=True,
        )
        html = done.content.decode()
        assert "80% is above this release&#x27;s maximum of 50%" in html
        assert "TIERDESK_RELEASE_MAX_WEIGHT" in html
    release.refresh_from_db()
    assert release.weight == settings.TIERDESK_RELEASE_START_WEIGHT
    # The form says so before it is sent: the browser refuses more than the maximum.
    page = client.get(CONSOLE).content.decode()
    assert 'name="weight" min="0" max="50"' in page
    # At the maximum it goes through.
    client.post(url, {"weight": 50, "reason": "max", "confirmed": "on"})
    release.refresh_from_db()
    assert release.weight == 50


def test_configuration_is_shown_as_json(staff: dict[str, Any]) -> None:  # noqa: F811
    config = {"prompt_version": "v2", "fast": {"temperature": 0.2}, "roles": {"L1": "fast"}}
    running(staff, config)
    html = operator(staff).get(CONSOLE).content.decode()
    start = html.index('data-testid="candidate-config">') + len('data-testid="candidate-config">')
    shown = html[start : html.index("</code>", start)].replace("&quot;", '"')
    assert json.loads(shown) == config
    assert "True" not in shown and "'" not in shown


def test_actions_keep_the_chosen_time_window(staff: dict[str, Any]) -> None:  # noqa: F811
    release = running(staff)
    client = operator(staff)
    page = client.get(CONSOLE + "?hours=72").content.decode()
    assert page.count('name="hours" value="72"') >= 4  # weight, pause, promote, rollback
    url = f"/operators/releases/{release.pk}/pause"
    confirm = client.post(url, {"reason": "look", "hours": "72"}).content.decode()
    assert 'name="hours" value="72"' in confirm and "?hours=72" in confirm
    done = client.post(url, {"reason": "look", "hours": "72", "confirmed": "on"})
    assert done.status_code == 302 and done["Location"] == CONSOLE + "?hours=72"
    # An odd value falls back to the default window, never an error.
    odd = client.post(
        url.replace("pause", "resume"), {"reason": "go", "hours": "5; drop", "confirmed": "on"}
    )
    assert odd["Location"] == CONSOLE + "?hours=6"
    new = client.post(
        "/operators/releases/new", {"name": "d2", "reason": "try", "config": "{}", "hours": "168"}
    )
    assert new["Location"] == CONSOLE + "?hours=168"


def test_chart_axis_shows_dates_over_more_than_a_day() -> None:
    start = datetime(2026, 11, 28, 9, 0, tzinfo=UTC)

    def axis(hours: int) -> str:
        points: list[tuple[datetime, float | None]] = [
            (start + timedelta(hours=h), 0.5) for h in range(hours + 1)
        ]
        return str(line_chart({"stable": points}, title="t", fmt=fmt_pct, chart_id="c"))

    assert ">09:00<" in axis(6) and "Nov" not in axis(6)
    week = axis(168)
    assert ">Nov 28 09:00<" in week and ">Dec 05 09:00<" in week
    assert ">Nov 29 21:00<" in axis(72)


def test_minute_axis_labels_are_distinct_for_short_waits() -> None:
    """A 3-second first human reply is 0.05 min: the axis read "0.0, 0.0, 0.1, 0.1, 0.1"."""
    import re

    start = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
    for wait in (0.05, 0.4, 3.0, 40.0, 400.0):
        points: list[tuple[datetime, float | None]] = [
            (start, wait),
            (start + timedelta(hours=1), wait),
        ]
        svg = str(line_chart({"m": points}, title="t", fmt=fmt_minutes, chart_id="c"))
        ticks = re.findall(r'x="50" y="[0-9.]+" class="tick" text-anchor="end">([^<]*)<', svg)
        assert len(ticks) == 5 and len(set(ticks)) == 5, (wait, ticks)


def test_an_incomplete_action_says_what_is_missing_with_the_release_maximum(
    staff: dict[str, Any],  # noqa: F811
    settings: Any,
) -> None:
    release = running(staff)
    client = operator(staff)
    url = f"/operators/releases/{release.pk}/weight"
    html = client.post(url, {"weight": 101, "reason": ""}, follow=True).content.decode()
    assert "Say why: the reason is kept in the audit trail." in html
    assert f"Give a weight between 0 and {release.max_weight}%." in html
    assert "between 0 and 100" not in html
    # Only the missing field is named.
    html = client.post(url, {"weight": 10, "reason": ""}, follow=True).content.decode()
    assert "Say why" in html and "Give a weight" not in html
    # In Chinese, too.
    html = client.post(
        url, {"weight": -1, "reason": "x"}, follow=True, HTTP_ACCEPT_LANGUAGE="zh-hans"
    ).content.decode()
    assert f"请给出 0 到 {release.max_weight}% 之间的权重。" in html
    release.refresh_from_db()
    assert release.weight == settings.TIERDESK_RELEASE_START_WEIGHT
