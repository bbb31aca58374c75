"""Issue #36 item 7 in headless Chromium: a Chinese browser (locale zh-CN) signs in to
the operator console and the agent desk (zh_pages_e2e.mjs) and sees Chinese labels,
chart legends and the desk's own live texts, and opens a verified shopper's queued
conversation whose customer panel words the orders' statuses and how the shopper was
verified in Chinese; no visible text there is English. The server is console_server
(seed_demo and releases_demo: six hours of release history)."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.browser.live import REPO, _manage, server_env
from tests.frontend.test_zh_pages import english as english_text
from tests.releases.test_console_browser import console_server

pytestmark = pytest.mark.browser

SCRIPT = Path(__file__).with_name("zh_pages_e2e.mjs")
NODE_TIMEOUT_S = 300
STAFF = (
    "from django.contrib.auth import get_user_model;"
    "get_user_model().objects.create_superuser('zh_staff', password='zh_staff_pw')"
)
CJK = ("\u4e00", "\u9fff")
# A demo shopper with an order in each of four statuses; one is given a status of the
# shop's own system, which the desk shows as the shop wrote it.
SHOPPER = "mohamed_li_1979"
SHOP_STATUS = ("#W2437730", "on hold")


def queued_shopper(public_id: str) -> str:
    """The shell code that gives the order its shop status and queues a Chinese
    conversation of the shopper, verified by email, for a person."""
    return (
        "from django.utils import timezone; from chatbot.models import Conversation;"
        "from chatbot.orders.models import Order;"
        f"Order.objects.filter(order_id={SHOP_STATUS[0]!r}).update(status={SHOP_STATUS[1]!r});"
        f"Conversation.objects.create(public_id={public_id!r}, customer_id={SHOPPER!r},"
        " identity='email', language='zh', handoff='queued', handoff_queued_at=timezone.now())"
    )


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


def shopper_data(database_url: str) -> set[str]:
    """What the desk's customer panel shows from the shop: the shopper's name and email,
    and the status the shop's own system gave an order."""
    import psycopg

    with psycopg.connect(database_url, connect_timeout=10) as conn:
        row = conn.execute(
            "SELECT first_name || ' ' || last_name, email FROM orders_customer"
            " WHERE customer_id = %s",
            (SHOPPER,),
        ).fetchone()
    return {*(row or ()), SHOP_STATUS[1]}


def data_or_json(text: str, data: set[str]) -> bool:
    if text in data:
        return True
    try:
        return isinstance(json.loads(text), dict | list)
    except ValueError:
        return False


def english_beyond(text: str, data: set[str]) -> bool:
    """English left in ``text`` once the data in it is taken out."""
    for value in sorted(data, key=len, reverse=True):
        text = text.replace(value, " ")
    return english_text(text)


def test_console_and_desk_in_a_chinese_browser(browser_tools: str, tmp_path: Path) -> None:
    with console_server(tmp_path) as server:
        _manage(server_env(server.database_url), server.log, "shell", "-c", STAFF)
        public_id = str(uuid.uuid4())
        _manage(
            server_env(server.database_url), server.log, "shell", "-c", queued_shopper(public_id)
        )
        cmd = [browser_tools, str(SCRIPT), "--base", server.url]
        cmd += ["--user", "zh_staff", "--password", "zh_staff_pw", "--conversation", public_id]
        cmd += ["--console-shot", str(tmp_path / "console-zh.png")]
        cmd += ["--desk-shot", str(tmp_path / "desk-zh.png")]
        proc = subprocess.run(
            cmd, cwd=REPO, capture_output=True, text=True, timeout=NODE_TIMEOUT_S, check=False
        )
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        result: dict[str, Any] = json.loads(lines[-1]) if lines else {}
        data = release_data(server.database_url)
        shop = shopper_data(server.database_url)
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
    # The page's own title, or desk.js's once the inbox came, "(1) …" as a shopper waits.
    assert "Tierdesk" in result["desk_title"] and chinese(result["desk_title"])
    assert chinese(result["desk_reply_placeholder"])
    # The open conversation's customer panel: the statuses Tierdesk knows in Chinese, the
    # shop system's own status as it wrote it, and how the shopper proved who they are.
    statuses = result["desk_order_statuses"]
    assert sorted(statuses) == sorted(["已处理", "待处理", "已送达", SHOP_STATUS[1]]), statuses
    rows = dict(result["desk_customer_rows"])
    assert rows["验证方式"] == "聊天中提供邮箱", rows
    english_left = [t for t in result["desk_english"] if english_beyond(t, shop)]
    assert english_left == [], result["desk_english"]
    assert result["errors"] == []
    for shot in ("console-zh.png", "desk-zh.png"):
        assert (tmp_path / shot).stat().st_size > 10_000
