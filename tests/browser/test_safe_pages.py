"""Safe defaults in Chromium against a real Daphne server (safe_pages_e2e.mjs): under
the Content-Security-Policy the demo shop's widget, the console, the desk, the admin and
its retraining chart work with no policy violation; five failed sign-ins show the
lockout page. Writes docs/admin-lockout.png when TIERDESK_DOCS_SCREENSHOTS=1."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from .live import REPO, LiveServer, _manage, server_env

pytestmark = pytest.mark.browser

SCRIPT = Path(__file__).with_name("safe_pages_e2e.mjs")
NODE_TIMEOUT_S = 300
USER, PASSWORD = "safe_boss", "safe-boss-password-1"
STAFF = (
    "from django.contrib.auth import get_user_model; from django.contrib.auth.models import Group;"
    "from releases.permissions import groups_ensure; groups_ensure();"
    "U = get_user_model();"
    f"u = U.objects.filter(username='{USER}').first() or U.objects.create_superuser("
    f"'{USER}', 'boss@shop.example', '{PASSWORD}');"
    "u.groups.add(*Group.objects.filter(name__in=['support agents', 'operators']))"
)


def test_pages_work_under_the_policy_and_failed_sign_ins_lock_out(
    browser_tools: str, daphne_server: LiveServer, tmp_path: Path
) -> None:
    env = server_env(daphne_server.database_url)
    _manage(env, daphne_server.log, "shell", "-c", STAFF)
    shot = (
        REPO / "docs" / "admin-lockout.png"
        if os.environ.get("TIERDESK_DOCS_SCREENSHOTS")
        else tmp_path / "admin-lockout.png"
    )
    cmd = [browser_tools, str(SCRIPT), "--base", daphne_server.url, "--user", USER]
    cmd += ["--password", PASSWORD, "--screenshot", str(shot)]
    try:
        proc = subprocess.run(
            cmd, cwd=REPO, capture_output=True, text=True, timeout=NODE_TIMEOUT_S, check=False
        )
    finally:
        # The lockout counts this machine's address: the other browser tests sign in
        # from it too.
        _manage(env, daphne_server.log, "axes_reset")
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    result = json.loads(lines[-1]) if lines else {}
    if proc.returncode != 0 or not result.get("ok"):
        log = daphne_server.log.read_text(errors="replace")[-3000:]
        pytest.fail(f"{result.get('error') or result}\nstderr: {proc.stderr[-2000:]}\n{log}")

    assert result["violations"] == [] and result["errors"] == [], result
    for name, page in result["pages"].items():
        assert page["status"] == 200, (name, page)
        assert "script-src 'self' 'wasm-unsafe-eval'" in page["csp"], (name, page)
    assert result["signed_in"]
    assert result["websocket"] is not None and result["websocket"]["url"].startswith("ws://")
    if result["chart_points"] > 1:
        click = result["chart_click"]
        assert click["after"] == click["target"] != click["before"], click
    lockout = result["lockout"]
    assert lockout["statuses"] == [200, 200, 200, 200, 429], lockout
    assert lockout["heading"] == "Too many sign-in attempts"
    assert "5 times in a row" in lockout["text"] and "15 minutes" in lockout["text"]
    assert shot.exists()
