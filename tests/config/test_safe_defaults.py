"""Safe defaults (config/checks.py, docs/security.md): a development install's
conveniences become errors as soon as the install is reachable from elsewhere.

The settings are read once per process, so the end-to-end cases run ``manage.py`` (or
import the ASGI application) in a subprocess with their own environment."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from config.checks import host_is_local, safety_problems
from config.settings.security import DEV_SECRET_KEY

ROOT = Path(__file__).resolve().parents[2]


def conf(**overrides: Any) -> SimpleNamespace:
    base: dict[str, Any] = {
        "ALLOWED_HOSTS": ["127.0.0.1", "localhost"],
        "DEBUG": True,
        "SECRET_KEY": DEV_SECRET_KEY,
        "TIERDESK_SHOPPER_TOKEN_KEY": DEV_SECRET_KEY,
        "TIERDESK_DEMO_SHOP": False,
        "TIERDESK_ORDER_BACKEND": "django",
        "TIERDESK_DEMO_IMPERSONATION": False,
        "TIERDESK_CHAT_IDENTITY_READS": False,
    }
    return SimpleNamespace(**(base | overrides))


def ids(settings: SimpleNamespace) -> list[str]:
    return [str(problem.id) for problem in safety_problems(settings)]


@pytest.mark.parametrize(
    ("host", "local"),
    [
        ("localhost", True),
        ("127.0.0.1", True),
        ("[::1]", True),
        ("shop.localhost", True),
        ("testserver", True),
        ("chat.shop.com", False),
        ("*", False),
        (".localhost", False),
        ("10.0.0.5", False),
    ],
)
def test_which_hosts_count_as_this_machine(host: str, local: bool) -> None:
    assert host_is_local(host) is local


def test_a_local_development_install_may_keep_its_conveniences() -> None:
    assert ids(conf()) == []
    assert ids(conf(ALLOWED_HOSTS=["shop.localhost", "127.0.0.1"])) == []


def test_debug_and_published_keys_are_errors_on_a_public_host() -> None:
    found = ids(conf(ALLOWED_HOSTS=["localhost", "chat.shop.com"]))
    assert found == ["tierdesk.E001", "tierdesk.E002"]
    # A wildcard is as public as a name.
    assert "tierdesk.E001" in ids(conf(ALLOWED_HOSTS=["*"]))


def test_each_published_key_is_named() -> None:
    public = {"ALLOWED_HOSTS": ["chat.shop.com"], "DEBUG": False}
    only_token = safety_problems(conf(SECRET_KEY=secrets.token_urlsafe(50), **public))
    assert [p.id for p in only_token] == ["tierdesk.E002"]
    assert "TIERDESK_SHOPPER_TOKEN_KEY" in only_token[0].msg
    assert "DJANGO_SECRET_KEY" not in only_token[0].msg
    real = conf(
        SECRET_KEY=secrets.token_urlsafe(50),
        TIERDESK_SHOPPER_TOKEN_KEY=secrets.token_urlsafe(32),
        **public,
    )
    assert ids(real) == []


def test_demo_impersonation_over_real_orders_is_an_error_anywhere() -> None:
    assert ids(conf(TIERDESK_DEMO_SHOP=True, TIERDESK_ORDER_BACKEND="http")) == ["tierdesk.E003"]
    assert ids(conf(TIERDESK_DEMO_SHOP=True, TIERDESK_DEMO_IMPERSONATION=True)) == []


def test_a_public_demo_shop_is_a_warning() -> None:
    problems = safety_problems(
        conf(
            ALLOWED_HOSTS=["demo.tierdesk.example"],
            DEBUG=False,
            SECRET_KEY=secrets.token_urlsafe(50),
            TIERDESK_SHOPPER_TOKEN_KEY=secrets.token_urlsafe(32),
            TIERDESK_DEMO_SHOP=True,
            TIERDESK_DEMO_IMPERSONATION=True,
        )
    )
    assert [(p.id, p.is_serious()) for p in problems] == [("tierdesk.W001", False)]


def _environment(**env: str) -> dict[str, str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "TIERDESK_")) and k not in ("DATABASE_URL", "REDIS_URL")
    }
    return base | {
        "TIERDESK_WARMUP_ON_START": "false",
        "DATABASE_URL": os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test"),
        "REDIS_URL": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/1"),
        **env,
    }


def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=_environment(**env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_manage_check_refuses_a_fresh_install_on_a_public_host() -> None:
    # TIERDESK_ENV unset is development: DEBUG on and the published keys.
    result = run("manage.py", "check", DJANGO_ALLOWED_HOSTS="chat.shop.com")
    assert result.returncode != 0
    assert "tierdesk.E001" in result.stderr and "tierdesk.E002" in result.stderr
    assert run("manage.py", "check").returncode == 0


def test_manage_check_refuses_the_demo_shop_with_real_orders() -> None:
    result = run(
        "manage.py",
        "check",
        TIERDESK_DEMO_SHOP="true",
        TIERDESK_ORDER_BACKEND="http",
        TIERDESK_ORDER_API_URL="https://shop.example/api",
    )
    assert result.returncode != 0 and "tierdesk.E003" in result.stderr


def test_the_server_refuses_to_start_where_check_would_fail() -> None:
    code = "import config.asgi"
    refused = run("-c", code, DJANGO_ALLOWED_HOSTS="chat.shop.com")
    assert refused.returncode != 0
    assert "refusing to start" in refused.stderr and "tierdesk.E001" in refused.stderr
    started = run(
        "-c",
        code,
        DJANGO_ALLOWED_HOSTS="chat.shop.com",
        DJANGO_DEBUG="false",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        TIERDESK_SHOPPER_TOKEN_KEY=secrets.token_urlsafe(32),
    )
    assert started.returncode == 0, started.stderr


def test_typed_email_reads_on_a_public_host_are_a_warning() -> None:
    public = conf(
        ALLOWED_HOSTS=["chat.shop.com"],
        DEBUG=False,
        SECRET_KEY=secrets.token_urlsafe(50),
        TIERDESK_SHOPPER_TOKEN_KEY=secrets.token_urlsafe(32),
    )
    assert ids(public) == []
    public.TIERDESK_CHAT_IDENTITY_READS = True
    assert ids(public) == ["tierdesk.W002"]
