"""Production hardening (docs/security.md): `check --deploy` is clean with the
production settings, production refuses to start without its secrets, and every
dependency is pinned to one version.

The settings are read once per process, so each case runs `manage.py` in a
subprocess with its own environment."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "TIERDESK_")) and k not in ("DATABASE_URL", "REDIS_URL")
    }
    base |= {
        "TIERDESK_ENV": "production",
        "TIERDESK_WARMUP_ON_START": "false",
        "DATABASE_URL": os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test"),
        "REDIS_URL": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/1"),
        **env,
    }
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=base,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_check_deploy_is_clean_with_production_settings() -> None:
    result = manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        TIERDESK_SHOPPER_TOKEN_KEY=secrets.token_urlsafe(32),
        DJANGO_ALLOWED_HOSTS="chat.example.com",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues (0 silenced)" in result.stdout


def test_production_refuses_to_start_without_its_secrets() -> None:
    result = manage("check")
    assert result.returncode != 0
    assert "production refuses to start without secrets" in result.stderr
    assert "DJANGO_SECRET_KEY" in result.stderr and "TIERDESK_SHOPPER_TOKEN_KEY" in result.stderr
    # The development key printed in the source is refused too.
    from config.settings.security import DEV_SECRET_KEY

    result = manage(
        "check", DJANGO_SECRET_KEY=DEV_SECRET_KEY, TIERDESK_SHOPPER_TOKEN_KEY=secrets.token_hex(16)
    )
    assert result.returncode != 0 and "DJANGO_SECRET_KEY" in result.stderr


def test_every_dependency_is_pinned_to_one_version() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        requirements += extra
    loose = [r for r in requirements if not re.fullmatch(r"[A-Za-z0-9_.\-\[\],]+==[^=<>~!*]+", r)]
    assert loose == []
    constraints = (ROOT / "requirements" / "constraints.txt").read_text().splitlines()
    pins = [line for line in constraints if line.strip() and not line.startswith("#")]
    assert pins and all("==" in line for line in pins)
