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
EN = {
    "question": "my parcel is late, can I speak to someone real?",
    "reply": "nobody from our support team is online",
    "intro": "Leave your email and question",
    "send": "Send",
    "placeholder": "Ask about orders",
    "done": "We've got your question",
}
# The demo page is English; a Chinese shopper still gets the form, its button and the
# widget's own labels in Chinese, the language of the conversation (docs/i18n.md).
ZH = {
    "question": "请帮我转人工客服，谢谢",
    "reply": "目前没有客服人员在线",
    "intro": "请留下邮箱和问题",
    "send": "提交",
    "placeholder": "咨询订单",
    "done": "我们已收到您的问题",
}


@pytest.mark.parametrize("want", [EN, ZH], ids=["en", "zh-on-an-english-page"])
def test_signed_in_shoppers_ticket_form_is_filled_and_reaches_the_shop(
    browser_tools: str, daphne_server: LiveServer, tmp_path: Path, want: dict[str, str]
) -> None:
    question_asked = want["question"]
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
        question_asked,
        "--screenshot",
        str(tmp_path / "ticket.png"),
    )
    assert result.get("ok"), result
    assert result["has_token"]
    assert want["reply"] in result["reply"]["text"], result
    assert result["form_email"] == JAMES_EMAIL, result
    assert question_asked in result["form_question"], result
    assert result["focused"] == "question"  # the email is there: the cursor waits below it
    assert want["intro"] in result["form_intro"], result
    assert result["form_send"] == want["send"], result
    assert result["placeholder"].startswith(want["placeholder"]), result
    assert want["done"] in result["done_text"]

    with psycopg.connect(server.database_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT email, question FROM desk_ticket WHERE id > %s", (before[0] if before else 0,)
        ).fetchall()
    assert [(email, question_asked in q) for email, q in rows] == [(JAMES_EMAIL, True)]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        mail = server.log.read_text(errors="replace")[len(log_before) :]
        if f"from {JAMES_EMAIL}" in mail:
            break
        time.sleep(0.2)
    assert f"from {JAMES_EMAIL}" in mail and question_asked in mail
