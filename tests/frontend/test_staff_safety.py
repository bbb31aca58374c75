"""Safe defaults for staff pages (docs/security.md): admin sign-ins are throttled by
django-axes with a clear lockout page (frontend/lockout.py), and every page Tierdesk
serves carries a Content-Security-Policy that runs only its own script files."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
LOGIN = "/admin/login/"


def attempt(client: Client, password: str, **headers: str) -> Any:
    return client.post(
        LOGIN, {"username": "boss", "password": password, "next": "/admin/"}, headers=headers
    )


@pytest.fixture
def boss() -> User:
    return User.objects.create_superuser("boss", "boss@shop.example", "right-password-1")


def test_failed_sign_ins_lock_the_address_with_a_clear_page(boss: User, settings: Any) -> None:
    client = Client()
    limit = settings.AXES_FAILURE_LIMIT
    assert limit == 5 and settings.AXES_COOLOFF_TIME.total_seconds() == 15 * 60
    for _ in range(limit - 1):
        assert attempt(client, "wrong").status_code == 200  # the form again, with its error
    locked = attempt(client, "wrong")
    assert locked.status_code == 429
    assert locked["Retry-After"] == "900"
    page = locked.content.decode()
    assert "Too many sign-in attempts" in page
    assert "failed to sign in 5 times in a row" in page and "15 minutes" in page
    # While locked, even the right password is refused: that is what stops guessing.
    again = attempt(client, "right-password-1")
    assert again.status_code == 429 and "_auth_user_id" not in client.session


def test_the_lockout_page_speaks_chinese_to_a_chinese_browser(boss: User) -> None:
    client = Client()
    for _ in range(5):
        response = attempt(client, "wrong", accept_language="zh-hans")
    page = response.content.decode()
    assert response.status_code == 429
    assert "登录尝试次数过多" in page and "15 分钟" in page


def test_a_good_sign_in_clears_the_failures(boss: User) -> None:
    client = Client()
    for _ in range(4):
        attempt(client, "wrong")
    assert attempt(client, "right-password-1").status_code == 302  # signed in
    client.logout()
    for _ in range(4):
        assert attempt(client, "wrong").status_code == 200  # counted from zero again


def test_scripts_get_the_lockout_as_json(boss: User) -> None:
    client = Client()
    for _ in range(4):
        attempt(client, "wrong")
    response = attempt(client, "wrong", x_requested_with="XMLHttpRequest")
    assert response.status_code == 429
    assert response.json() == {"error": "locked_out", "failures": 5, "retry_after_s": 900}


@pytest.mark.parametrize("path", ["/", "/operators/", "/desk/", LOGIN, "/admin/"])
def test_every_page_carries_the_content_security_policy(path: str, boss: User) -> None:
    client = Client()
    client.force_login(boss)
    policy = client.get(path)["Content-Security-Policy"]
    directives = dict(
        (part.split()[0], part.split()[1:]) for part in policy.split(";") if part.strip()
    )
    assert directives["script-src"] == ["'self'", "'wasm-unsafe-eval'"]
    assert directives["default-src"] == ["'self'"]
    assert directives["object-src"] == ["'none'"]
    assert directives["connect-src"] == ["'self'"]


def test_no_template_holds_an_inline_script_or_handler() -> None:
    """The policy refuses inline scripts: a template that had one would break silently
    in the browser, so none may (data islands with a JSON type run nothing)."""
    inline = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>", re.I)
    handler = re.compile(r"\son[a-z]+\s*=\s*[\"']", re.I)
    found = []
    for template in ROOT.glob("*/templates/**/*.html"):
        text = template.read_text(encoding="utf-8")
        if inline.search(text) or handler.search(text):
            found.append(str(template.relative_to(ROOT)))
    assert found == []
