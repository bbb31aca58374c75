"""Fault injection (issue #8): kill -9 Daphne in the middle of a reply, in Chromium.

The shopper asks the widget (headless Chromium, widget_e2e.mjs ``killed``) a question
that a real model answers at length. Once part of the reply is on screen, the whole
Daphne process group gets SIGKILL. The database then holds the shopper's message and
the reply row still marked streaming. A new Daphne starts on the same port, as a
supervisor would restart it. The widget must notice, show "reconnecting", come back by
itself, and show the stored conversation: the question, and the cut-off reply marked
incomplete. Nothing is lost and nothing is duplicated.

Every wait is bounded and everything is on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.faults import Daphne

from .live import REPO, _manage, _server_database, _tail, server_env
from .test_widget import SCRIPT

pytestmark = [pytest.mark.browser, pytest.mark.models]
# The server's warm-up has conversations of its own: look at ours only.
ROWS = (
    "SELECT m.role, m.text, m.status FROM chatbot_message m "
    "JOIN chatbot_conversation c ON c.id = m.conversation_id "
    "WHERE m.conversation_id = (SELECT conversation_id FROM chatbot_message "
    "WHERE text = %s AND role = 'user' ORDER BY id DESC LIMIT 1) ORDER BY m.id"
)
QUESTION = (
    "Which is better for a week of hiking in the rain, leather boots or trail shoes, and why?"
)
NODE_TIMEOUT_S = 300


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[Daphne, str]]:
    log = tmp_path / "server.log"
    with _server_database(tmp_path, "_kill") as database_url:
        # A long reply, so the kill lands in the middle of it. The L3 grounded guard is
        # off: it shows only whole, backed sentences, so the small stand-in model's reply
        # may show nothing until its end; what is under test is the kill, not grounding
        # (tests/chatbot/test_l3_grounded.py).
        env = server_env(
            database_url,
            {"TIERDESK_L3_MAX_TOKENS": "200", "TIERDESK_L3_GROUNDING_GUARD": "false"},
        )
        _manage(env, log, "seed_demo")
        daphne = Daphne(env, log)
        try:
            yield daphne, database_url
        finally:
            daphne.stop()


def _rows(database_url: str) -> list[tuple[str, str, str]]:
    with psycopg.connect(database_url, connect_timeout=10) as conn:
        return [(r[0], r[1], r[2]) for r in conn.execute(ROWS, (QUESTION,)).fetchall()]


@contextlib.contextmanager
def _scenario(
    browser_tools: str, daphne: Daphne, scenario: str, question: str, *extra: str
) -> Iterator[subprocess.Popen[str]]:
    """widget_e2e.mjs's ``scenario`` against ``daphne``; its stdout says when to act.
    The browser never outlives the test."""
    node = subprocess.Popen(
        [
            *(browser_tools, str(SCRIPT), "--base", daphne.url, "--scenario", scenario),
            *("--question", question, "--timeout-ms", "150000", *extra),
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield node
    finally:
        if node.poll() is None:
            node.kill()
            node.wait(timeout=10)


def _result(node: subprocess.Popen[str], daphne: Daphne) -> dict[str, Any]:
    """The scenario's result line, once it ends (its own waits are bounded)."""
    out, err = node.communicate(timeout=NODE_TIMEOUT_S)
    results = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
    result: dict[str, Any] = results[-1] if results else {}
    assert result.get("ok"), f"{result.get('error') or result}\n{err[-2000:]}\n{_tail(daphne.log)}"
    return result


def test_kill_9_mid_reply_then_the_widget_reconnects_to_the_stored_conversation(
    browser_tools: str, server: tuple[Daphne, str], model_files: None
) -> None:
    daphne, database_url = server
    daphne.start()
    with _scenario(browser_tools, daphne, "killed", QUESTION) as node:
        assert node.stdout is not None
        lines: list[str] = []
        for line in node.stdout:  # ends when node exits; node's own waits are bounded
            lines.append(line)
            if line.strip() == "KILL-NOW":
                break
        assert lines and lines[-1].strip() == "KILL-NOW", f"no reply began: {lines[-3:]}"
        daphne.kill9()
        # The shopper's message was stored before the reply began; the reply row exists
        # and was still streaming when the process died.
        killed = _rows(database_url)
        assert [(r[0], r[2]) for r in killed] == [("user", "received"), ("bot", "streaming")]
        daphne.start(warm_up=False)
        result = _result(node, daphne)

    # On screen: it said it was reconnecting, came back, and shows what was stored.
    assert "reconnecting" in result["states"] and result["states"][-1] == "open"
    assert result["hellos"] >= 2
    log = result["log"]
    assert [(m["role"], m["status"]) for m in log] == [("user", "sent"), ("bot", "incomplete")]
    assert log[0]["text"] == QUESTION
    assert log[1]["note"] == "reply was cut off"
    assert log[1]["text"].strip(), "the stored part of the reply is shown"
    # What the widget shows is what the database holds: nothing lost, nothing twice.
    after = _rows(database_url)
    assert [(r[0], r[2]) for r in after] == [("user", "received"), ("bot", "incomplete")]
    assert after[0][1] == QUESTION and after[1][1] == log[1]["text"]


OUTBOX_QUESTION = "Do you ship to Canada?"


def test_a_message_typed_while_the_server_is_down_survives_a_reload_and_is_sent_once(
    browser_tools: str, server: tuple[Daphne, str], model_files: None, tmp_path: Path
) -> None:
    """Issue #19: the widget's own resend logic. The shopper types while Daphne is dead
    and reloads before it is back; the unsent message must still be on screen, go out
    with its old client id once the server is back, be stored once and be answered."""
    daphne, database_url = server
    daphne.start()
    shot = tmp_path / "outbox.png"
    with _scenario(
        browser_tools, daphne, "outbox", OUTBOX_QUESTION, "--screenshot", str(shot)
    ) as node:
        assert node.stdout is not None
        seen: list[str] = []
        for line in node.stdout:
            seen.append(line)
            if line.strip() == "KILL-NOW":
                daphne.kill9()
            elif line.strip() == "START-NOW":
                break
        assert seen and seen[-1].strip() == "START-NOW", f"{seen[-3:]}\n{_tail(daphne.log)}"
        # Nothing reached the server while it was down.
        assert _rows_for(database_url, OUTBOX_QUESTION) == []
        daphne.start(warm_up=False)
        result = _result(node, daphne)
    assert result["before_reload"]["status"] == "pending"
    assert result["before_reload"]["note"], "the bubble says it was not sent"
    # After the reload the message is still on screen, still waiting to be sent.
    assert result["after_reload"]["status"] == "pending"
    assert OUTBOX_QUESTION in result["after_reload"]["text"]
    assert shot.stat().st_size > 10_000  # the page as the shopper saw it after the reload
    log = result["log"]
    assert [m["role"] for m in log[-2:]] == ["user", "bot"]
    assert log[-2]["text"] == OUTBOX_QUESTION and log[-2]["status"] == "sent"
    assert sum(m["text"] == OUTBOX_QUESTION for m in log) == 1
    assert result["outbox_left"] == []  # acked: nothing left to resend
    # Stored exactly once, and answered.
    rows = _rows_for(database_url, OUTBOX_QUESTION)
    assert [(r[0], r[1]) for r in rows] == [("user", OUTBOX_QUESTION), ("bot", rows[1][1])]
    assert rows[1][2] == "complete" and rows[1][1].strip()


def _rows_for(database_url: str, text: str) -> list[tuple[str, str, str]]:
    """The shopper message with this text and the replies to it, in order."""
    with psycopg.connect(database_url, connect_timeout=10) as conn:
        return [
            (r[0], r[1], r[2])
            for r in conn.execute(
                "SELECT role, text, status FROM chatbot_message WHERE id IN "
                "(SELECT id FROM chatbot_message WHERE role = 'user' AND text = %s) "
                "OR reply_to_id IN (SELECT id FROM chatbot_message WHERE role = 'user' "
                "AND text = %s) ORDER BY id",
                (text, text),
            ).fetchall()
        ]
