"""Human handoff in two real Chromium pages, a shopper and an agent, against a real
Daphne server (desk_e2e.mjs): the shopper asks for a person, the agent sees the
conversation appear live, claims it, they write both ways, the agent resolves it and
the bot answers the next question; a reload shows the person's message. Also writes
the desk screenshot for docs/desk.png when TIERDESK_DOCS_SCREENSHOTS=1."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from .live import REPO, LiveServer, agent_create

pytestmark = pytest.mark.browser

SCRIPT = Path(__file__).with_name("desk_e2e.mjs")
NODE_TIMEOUT_S = 300


def test_shopper_and_agent_talk_through_the_desk(
    browser_tools: str, daphne_server: LiveServer, tmp_path: Path
) -> None:
    agent_create(daphne_server, "desk_agent", first_name="Sam")
    shot = (
        REPO / "docs" / "desk.png"
        if os.environ.get("TIERDESK_DOCS_SCREENSHOTS")
        else tmp_path / "desk.png"
    )
    cmd = [
        browser_tools,
        str(SCRIPT),
        "--base",
        daphne_server.url,
        "--agent",
        "desk_agent",
        "--password",
        "desk_agent",
        "--screenshot",
        str(shot),
        "--widget-screenshot",
        str(tmp_path / "widget-handoff.png"),
    ]
    proc = subprocess.run(
        cmd, cwd=REPO, capture_output=True, text=True, timeout=NODE_TIMEOUT_S, check=False
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    result = json.loads(lines[-1]) if lines else {}
    if proc.returncode != 0 or not result.get("ok"):
        pytest.fail(
            f"desk scenario failed: {result.get('error') or result}\nstderr: {proc.stderr[-2000:]}"
            f"\nserver log:\n{daphne_server.log.read_text(errors='replace')[-4000:]}"
        )
    assert "number 1 in the queue" in result["queued_text"]
    assert "Sam" in result["claimed_text"]
    assert "I want to talk to a human" in result["queue_item"]
    assert result["typing_text"].startswith("Sam is typing")
    assert result["agent_name_shown"].startswith("Sam")
    assert result["note_leaked"] is False
    assert "Sam" in result["rate_label"]
    assert result["bot_after"] == "L1"
    assert "replacement" in result["history_agent"]
    assert result["canned"] > 5
    # Topics and the replies' own words, never "intent · key".
    assert "Cancel order" in result["canned_groups"]
    assert not any("_" in g for g in result["canned_groups"])
    assert not any("·" in label or "_" in label for label in result["canned_labels"])
    assert result["kb_first"]
    assert result["errors"] == []
    assert shot.stat().st_size > 10_000
