"""Issue #36 item 7 in headless Chromium: a Chinese browser (locale zh-CN) signs in to
the operator console and the agent desk (zh_pages_e2e.mjs) and sees Chinese labels,
chart legends and the desk's own live texts; no visible text there is English. The
server is console_server (seed_demo and releases_demo: six hours of release history)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.browser.live import REPO, _manage, server_env
from tests.releases.test_console_browser import console_server

pytestmark = pytest.mark.browser

SCRIPT = Path(__file__).with_name("zh_pages_e2e.mjs")
NODE_TIMEOUT_S = 300
STAFF = (
    "from django.contrib.auth import get_user_model;"
    "get_user_model().objects.create_superuser('zh_staff', password='zh_staff_pw')"
)
CJK = ("\u4e00", "\u9fff")


def chinese(text: str) -> bool:
    return any(CJK[0] <= ch <= CJK[1] for ch in text)


def release_data(database_url: str) -> set[str]:
    """What the console shows from the database: release names and descriptions, the
    audit trail's actors and reasons, the guardrail decisions' summaries. Data, as
    written (by people, or by the system as a record), not UI strings."""
    import psycopg

    with psycopg.connect(database_url, connect_timeout=10) as conn:
        rows = conn.execute(
            "SELECT name FROM releases_release UNION SELECT description FROM releases_release"
            " UNION SELECT actor FROM releases_releaseevent"
            " UNION SELECT reason FROM releases_releaseevent"
            " UNION SELECT summary FROM releases_guardraildecision"
        ).fetchall()
    return {str(value).strip() for (value,) in rows if value}


def data_or_json(text: str, data: set[str]) -> bool:
    if text in data:
        return True
    try:
        return isinstance(json.loads(text), dict | list)
    except ValueError:
        return False


def test_console_and_desk_in_a_chinese_browser(browser_tools: str, tmp_path: Path) -> None:
    with console_server(tmp_path) as server:
        _manage(server_env(server.database_url), server.log, "shell", "-c", STAFF)
        cmd = [browser_tools, str(SCRIPT), "--base", server.url]
        cmd += ["--user", "zh_staff", "--password", "zh_staff_pw"]
        cmd += ["--console-shot", str(tmp_path / "console-zh.png")]
        cmd += ["--desk-shot", str(tmp_path / "desk-zh.png")]
        proc = subprocess.run(
            cmd, cwd=REPO, capture_output=True, text=True, timeout=NODE_TIMEOUT_S, check=False
        )
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        result: dict[str, Any] = json.loads(lines[-1]) if lines else {}
        data = release_data(server.database_url)
        if proc.returncode != 0 or not result.get("ok"):
            pytest.fail(
                f"zh_pages_e2e failed ({proc.returncode}): {result.get('error') or result}\n"
                f"stderr: {proc.stderr[-2000:]}\nserver log:\n{server.log.read_text()[-4000:]}"
            )
    assert result["console_lang"] == result["desk_lang"] == "zh-hans"
    # The cost chart's and the handoff charts' legends are Chinese; variant and tier
    # names (stable, candidate, L1…) are names, not words.
    assert "实际（估算）" in result["legends"] and "全 L3 基线" in result["legends"]
    english = [t for t in result["console_english"] if not data_or_json(t, data)]
    assert english == [], english
    # desk.js wrote these after the page loaded, from strings.js's Chinese block.
    assert result["desk_conn"] == "已连接"
    assert result["desk_title"].startswith("Tierdesk") and chinese(result["desk_title"])
    assert chinese(result["desk_reply_placeholder"])
    assert result["desk_english"] == [], result["desk_english"]
    assert result["errors"] == []
    for shot in ("console-zh.png", "desk-zh.png"):
        assert (tmp_path / shot).stat().st_size > 10_000
