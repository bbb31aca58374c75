"""The widget in headless Chromium against a real Daphne server (tests/browser/conftest.py).

Each test runs one scenario of widget_e2e.mjs and asserts on the JSON it prints.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from .live import REPO, SEED_COMMAND, LiveServer, node_scenario, server_query

pytestmark = pytest.mark.browser

SCRIPT = Path(__file__).with_name("widget_e2e.mjs")
ORDER_ID = "#W2611340"
DOCS_SCREENSHOT = REPO / "docs" / "widget.png"
NODE_TIMEOUT_S = 300


def run_scenario(node: str, server: LiveServer, scenario: str, *args: str) -> dict[str, Any]:
    return node_scenario(node, SCRIPT, server, scenario, *args, timeout_s=NODE_TIMEOUT_S)


def order_status(database_url: str, order_id: str) -> str:
    """The order's status as stored in the server's own database."""
    rows = server_query(
        database_url, "SELECT status FROM orders_order WHERE order_id = %s", order_id
    )
    assert rows, f"{order_id} is not in the seeded demo data"
    return str(rows[0][0])


@pytest.fixture(scope="session")
def seeded(daphne_server: LiveServer) -> LiveServer:
    if not SEED_COMMAND.exists():
        pytest.skip("seed_demo is not there yet: no demo orders to ask about")
    return daphne_server


def test_widget_streams_an_order_answer_and_resumes(
    browser_tools: str, seeded: LiveServer, tmp_path: Path
) -> None:
    shot = tmp_path / "widget.png"
    result = run_scenario(
        browser_tools,
        seeded,
        "desktop",
        "--question",
        f"where is my order {ORDER_ID}?",
        "--screenshot",
        str(shot),
    )
    status = order_status(seeded.database_url, ORDER_ID)
    reply = result["reply"]

    assert result["has_token"] and result["identified"], result
    assert "james_li_5688" in result["signed_in"] or "James" in result["signed_in"]
    # The shopper's bubble is drawn before the server answers.
    assert result["user_bubble"]["text"].startswith("where is my order")
    assert not reply["errors"], reply
    assert result["states_during_reply"] == [], "the socket dropped while the reply streamed"
    assert reply["status"] == "complete"
    assert reply["tier"] == "L1", reply
    assert reply["badge"].startswith("L1"), reply
    assert "intent" in reply["tooltip"] and "first chunk" in reply["tooltip"], reply
    # The stored status, in the words the bot uses for it ("processed" reads "shipped").
    from chatbot.answerers.order_format import STATUS_TEXT

    said = {status.lower(), STATUS_TEXT["en"].get(status, status).lower()}
    assert any(word in reply["text"].lower() for word in said), (status, reply["text"])
    assert ORDER_ID in reply["text"], reply["text"]
    # Streaming, not one blob: several chunk frames before done, and the bubble grew
    # on screen in several steps.
    assert result["chunk_frames"] > 1, result
    assert len(result["dom_growth"]) > 1, result["dom_growth"]
    assert result["aria_live"] == "polite"
    assert not result["console_errors"], result["console_errors"]

    # A reload resumes the stored conversation through ?session=.
    assert result["session_key"]
    assert f"session={result['session_key']}" in result["resume_url"], result["resume_url"]
    roles = [m["role"] for m in result["resumed_log"]]
    assert roles[:2] == ["user", "bot"], result["resumed_log"]
    assert result["resumed_log"][1]["text"] == reply["text"]
    assert result["resumed_log"][1]["tier"] == "L1"
    # A dropped socket shows "reconnecting" and comes back.
    assert result["reconnect_states"][:1] == ["reconnecting"], result["reconnect_states"]
    assert result["reconnect_states"][-1] == "open"

    # docs/widget.png is the README's picture: written when missing, or on request.
    if not DOCS_SCREENSHOT.exists() or os.environ.get("TIERDESK_UPDATE_SCREENSHOTS") == "1":
        shutil.copyfile(shot, DOCS_SCREENSHOT)


def test_widget_fills_a_phone_screen(browser_tools: str, daphne_server: LiveServer) -> None:
    result = run_scenario(browser_tools, daphne_server, "phone")
    assert result["launcher_in_view"], result
    assert result["fits"], result
    assert result["full_screen"], result
    assert result["page_scroll_width"] <= result["viewport"]["width"], result
    assert result["user_bubble"]["text"] == "hi"


def test_widget_is_usable_with_the_keyboard_alone(
    browser_tools: str, daphne_server: LiveServer
) -> None:
    result = run_scenario(browser_tools, daphne_server, "keyboard")
    focus = result["launcher_focus"]
    assert "launcher" in focus["cls"], result
    assert focus["label"], "the launcher has an accessible name"
    assert focus["outline"] != "none", "keyboard focus is visible"
    # Enter opens the panel and puts the cursor in the message box.
    assert result["after_open_focus"]["tag"] == "textarea", result
    assert result["after_open_focus"]["label"], "the message box is labelled"
    # Shift+Enter is a newline; Enter sends.
    assert result["draft"] == "hello, first line\nsecond line"
    assert result["sent"] == {"bubble": "hello, first line\nsecond line", "input": ""}
    assert result["acked"] == "sent", result
    labels = result["labels"]
    assert all(labels[k] for k in ("input", "send", "close", "launcher")), labels
    assert labels["log_live"] == "polite" and labels["dialog"] == "dialog"
    # Escape closes the panel and gives focus back to the launcher.
    assert result["closed"] is True
    assert "launcher" in result["after_close_focus"]["cls"], result
