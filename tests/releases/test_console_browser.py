"""The operator console and the widget's CSAT controls in headless Chromium.

A real Daphne serves its own database, seeded with the demo shop and six hours of
release history (``manage.py releases_demo``: the real services on a replayed clock).
The driver (console_e2e.mjs) signs in as the operator, reads the charts, moves the
weight through the confirmation page, and in the widget rates a reply (up, then
down) and the conversation; the ratings are then read from the server's database.
The screenshot of the console is docs/operator-console.png.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.live import (
    CHROMIUM,
    REPO,
    LiveServer,
    _manage,
    _server_database,
    _stop,
    daphne_start,
    server_env,
)

pytestmark = pytest.mark.browser

SCRIPT = Path(__file__).with_name("console_e2e.mjs")
SCREENSHOT = REPO / "docs" / "operator-console.png"
NODE_TIMEOUT_S = 300


@contextlib.contextmanager
def console_server(tmp: Path) -> Iterator[LiveServer]:
    """Daphne on a seeded database, without the model warm-up of tests/browser: the
    console needs no model, and the widget's greeting is a template."""
    log = tmp / "server.log"
    with _server_database(tmp) as database_url:
        env = server_env(database_url, {"TIERDESK_WARMUP_ON_START": "false"})
        _manage(env, log, "seed_demo")
        _manage(env, log, "releases_demo")
        proc, url = daphne_start(env, log)
        try:
            yield LiveServer(url=url, database_url=database_url, log=log)
        finally:
            _stop(proc)


def feedback_rows(database_url: str) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(database_url, connect_timeout=10) as conn:
        return conn.execute(
            "SELECT kind, value, satisfied, tier, intent, variant, changes "
            "FROM chatbot_feedback ORDER BY kind"
        ).fetchall()


def test_console_and_widget_csat_in_chromium(tmp_path: Path) -> None:
    node = shutil.which("node")
    if (
        node is None
        or not CHROMIUM.exists()
        or not (REPO / "node_modules" / "playwright-core").is_dir()
    ):
        pytest.fail(
            "browser tests need node, /usr/bin/chromium and playwright-core: "
            "run bash scripts/browser-setup.sh"
        )
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        pytest.fail("run through scripts/pytest.sh (PostgreSQL)")
    # docs/operator-console.png is the README's picture: rewritten only on request (or
    # when missing), so a test run leaves the checkout clean.
    update = not SCREENSHOT.exists() or os.environ.get("TIERDESK_UPDATE_SCREENSHOTS") == "1"
    shot = SCREENSHOT if update else tmp_path / "operator-console.png"
    with console_server(tmp_path) as server:
        cmd = [node, str(SCRIPT), "--base", server.url, "--screenshot", str(shot)]
        cmd += ["--incomplete-screenshot", str(tmp_path / "incomplete-action.png")]
        proc = subprocess.run(
            cmd, cwd=REPO, capture_output=True, text=True, timeout=NODE_TIMEOUT_S, check=False
        )
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        result: dict[str, Any] = json.loads(lines[-1]) if lines else {}
        if proc.returncode != 0 or not result.get("ok"):
            pytest.fail(
                f"console_e2e failed ({proc.returncode}): {result.get('error') or result}\n"
                f"stderr: {proc.stderr[-2000:]}\nserver log:\n{server.log.read_text()[-4000:]}"
            )
        rows = feedback_rows(server.database_url)

    assert result["login_redirect"] and result["after_login"] == "/operators/"
    assert result["charts"] == 7 and result["polylines"] >= 10
    assert result["has_rollback_row"]  # releases_demo's trial was rolled back by the guardrail
    assert result["weight_after"] == result["weight_before"] + 5
    assert f"to {result['weight_after']}%" in result["confirm_effect"]
    assert "move to the candidate" in result["confirm_effect"]
    assert not result["console_errors"]
    assert "Say why: the reason is kept in the audit trail." in result["incomplete_message"]
    assert "Give a weight between 0 and 50%." in result["incomplete_message"]
    # CSAT in the widget: the bar appears with the first reply; up then down is one rating.
    assert result["csat_hidden_before"] is True and result["csat_hidden_after"] is False
    assert result["pressed"] == [["up", "false"], ["down", "true"]]
    assert result["after_reload"] == {"rating": "down", "score": "4"}
    assert [r[:3] for r in rows] == [("score", 4, True), ("thumb", 0, False)]
    thumb = rows[1]
    assert thumb[3] == "L1" and thumb[4] == "greeting" and thumb[5] in ("stable", "candidate")
    assert thumb[6] == 1  # changed once, not stored twice
    assert shot.exists() and shot.stat().st_size > 10_000
