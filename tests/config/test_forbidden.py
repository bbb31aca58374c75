"""Issue #18 item 3: a signed-in user without the operators' permission gets a styled
403 page for /operators/, and the server logs one line for it, not a traceback."""

from __future__ import annotations

import logging

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

pytestmark = pytest.mark.django_db


def test_denied_operator_console_is_a_page_and_one_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    user = User.objects.create_user("support", "support@example.com", "pw", is_staff=True)
    client = Client()
    client.force_login(user)
    handler = logging.getLogger().handlers[0]
    with caplog.at_level(logging.WARNING, logger="django.request"):
        response = client.get("/operators/")
    assert response.status_code == 403
    page = response.content.decode()
    assert "You don't have access to this page" in page and "console.css" in page
    assert "support" in page  # who is signed in, so they know why
    assert "<strong>operators</strong> group" in page
    denied = [r for r in caplog.records if r.name == "django.request"]
    assert len(denied) == 1 and "Forbidden" in denied[0].getMessage()
    # The configured handler prints it as one line: no traceback attached.
    assert denied[0].exc_info is None
    assert "\n" not in handler.format(denied[0])


def test_denied_desk_names_the_agents_group_not_the_operators() -> None:
    """An operator opening /desk/ was told the page was the operator console's."""
    from releases.permissions import groups_ensure

    groups_ensure()
    user = User.objects.create_user("op", "op@example.com", "pw", is_staff=True)
    user.groups.add(Group.objects.get(name="operators"))
    client = Client()
    client.force_login(user)
    response = client.get("/desk/")
    assert response.status_code == 403
    page = response.content.decode()
    assert "<strong>support agents</strong> group" in page
    assert "<strong>operators</strong> group" not in page


def test_readiness_503_while_warming_up_is_not_logged_as_an_error(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``make run`` polls /readyz every second during a warm-up of minutes; each 503 was
    an ``ERROR django.request`` line. It is expected, so it is dropped; a 503 from any
    other page still is logged."""
    from django.http import HttpResponse

    from inference.warmup import Readiness

    monkeypatch.setattr("config.views.READINESS", Readiness())  # not ready yet
    with caplog.at_level(logging.WARNING, logger="django.request"):
        response = Client().get("/readyz")
    assert response.status_code == 503 and response.json()["ready"] is False
    assert [r for r in caplog.records if r.name == "django.request"] == []

    from django.utils.log import log_response

    with caplog.at_level(logging.WARNING, logger="django.request"):
        other = Client().get("/healthz")
        log_response(
            "Service Unavailable: %s",
            "/healthz",
            response=HttpResponse(status=503),
            request=other.wsgi_request,
        )
    logged = [r for r in caplog.records if r.name == "django.request"]
    assert len(logged) == 1 and logged[0].levelno == logging.ERROR
