"""Issue #15, nobody online, in Chromium: the signed-in shopper who asks for a person gets
the ticket form already filled with their email (from the shop's token, never typed) and
the message they wrote; sending it stores the ticket and emails the shop (Django's
console backend of the embedded default, i.e. the server's log)."""

from __future__ import annotations

import time
from pathlib import Path

import psycopg
import pytest

from .live import LiveServer
from .test_widget import run_scenario

pytestmark = pytest.mark.browser

JAMES_EMAIL = "james.li4495@example.com"  # the demo page's default shopper, james_li_5688
QUESTION = "my parcel is late, can I speak to someone real?"


def test_signed_in_shoppers_ticket_form_is_filled_and_reaches_the_shop(
    browser_tools: str, daphne_server: LiveServer, tmp_path: Path
) -> None:
    server = daphne_server
    # The live server is shared with the desk test, whose agent may still count as online.
    with psycopg.connect(server.database_url, autocommit=True) as conn:
        conn.execute("UPDATE chatbot_agentpresence SET connections = 0")
        before = conn.execute("SELECT coalesce(max(id), 0) FROM desk_ticket").fetchone()
    log_before = server.log.read_text(errors="replace")

    result = run_scenario(
        browser_tools,
        server,
        "ticket",
        "--question",
        QUESTION,
        "--screenshot",
        str(tmp_path / "ticket.png"),
    )
    assert result.get("ok"), result
    assert result["has_token"]
    assert "nobody from our support team is online" in result["reply"]["text"], result
    assert result["form_email"] == JAMES_EMAIL, result
    assert QUESTION in result["form_question"], result
    assert result["focused"] == "question"  # the email is there: the cursor waits below it
    assert "We've got your question" in result["done_text"]

    with psycopg.connect(server.database_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT email, question FROM desk_ticket WHERE id > %s", (before[0] if before else 0,)
        ).fetchall()
    assert [(email, QUESTION in question) for email, question in rows] == [(JAMES_EMAIL, True)]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        mail = server.log.read_text(errors="replace")[len(log_before) :]
        if f"from {JAMES_EMAIL}" in mail:
            break
        time.sleep(0.2)
    assert f"from {JAMES_EMAIL}" in mail and QUESTION in mail
