"""The bot check in headless Chromium against Daphne with TIERDESK_BOTCHECK=enforce.

Each test runs one scenario of botcheck_e2e.mjs: the real widget collects the events,
the committed botcheck.wasm computes the features and the fingerprint, and the server
verifies and scores them (docs/botcheck.md).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from chatbot.botcheck import FEATURE_NAMES

from .live import LiveServer

pytestmark = pytest.mark.browser

SCRIPT = Path(__file__).with_name("botcheck_e2e.mjs")
NODE_TIMEOUT_S = 300


def run(node: str, server: LiveServer, scenario: str) -> dict[str, Any]:
    cmd = [node, str(SCRIPT), "--base", server.url, "--scenario", scenario]
    try:
        proc = subprocess.run(
            cmd,
            cwd=SCRIPT.parents[2],
            capture_output=True,
            text=True,
            timeout=NODE_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{scenario}: node did not finish in {NODE_TIMEOUT_S}s: {exc.stdout!r}")
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    result: dict[str, Any] = json.loads(lines[-1]) if lines else {}
    if proc.returncode != 0 or not result.get("ok"):
        pytest.fail(
            f"{scenario} failed (exit {proc.returncode}): {result.get('error') or result}\n"
            f"stderr: {proc.stderr[-2000:]}\nserver log:\n"
            f"{server.log.read_text(errors='replace')[-3000:]}"
        )
    return result


def features(result: dict[str, Any]) -> dict[str, float]:
    frame = result["message_frame"]
    assert frame and frame["bot"]["v"] == 1 and len(frame["bot"]["fp"]) == 16
    return {n: v / 1000 for n, v in zip(FEATURE_NAMES, frame["bot"]["f"], strict=True)}


def test_constant_interval_typing_without_mouse_is_refused(
    browser_tools: str, botcheck_server: LiveServer
) -> None:
    result = run(browser_tools, botcheck_server, "constant_typing")
    assert (result["first"]["type"], result["first"]["code"]) == ("error", "bot_refused")
    f = features(result)
    assert f["pointer_samples"] == 0 and f["key_count"] >= 20
    assert f["key_interval_cv"] < 0.15  # what gave it away
    assert result["bubble_status"] == "refused"
    assert not result["console_errors"]


def test_straight_line_mouse_with_uniform_typing_is_refused(
    browser_tools: str, botcheck_server: LiveServer
) -> None:
    result = run(browser_tools, botcheck_server, "linear_mouse")
    assert result["first"]["code"] == "bot_refused"
    f = features(result)
    assert f["pointer_samples"] >= 8 and f["pointer_straight_share"] > 0.8
    assert f["key_interval_cv"] < 0.15


def test_human_like_input_is_allowed_and_answered(
    browser_tools: str, botcheck_server: LiveServer
) -> None:
    result = run(browser_tools, botcheck_server, "human")
    assert result["first"]["type"] == "ack", result["first"]
    assert result["last"]["type"] == "done"
    f = features(result)
    assert f["pointer_samples"] >= 20 and f["pointer_straightness"] < 0.985
    assert f["key_interval_cv"] > 0.2 and f["key_hold_mean_ms"] > 20
    assert not result["console_errors"]


def test_fingerprint_replayed_from_another_connection_is_refused(
    browser_tools: str, botcheck_server: LiveServer
) -> None:
    result = run(browser_tools, botcheck_server, "replay")
    # Accepted where it was made...
    assert result["original"]["first"]["type"] == "ack" and result["original"]["has_bot"]
    # ...refused on a new connection, to the same conversation or to a new one.
    for replay in (result["same_session"], result["new_session"]):
        assert replay["got"][0]["type"] == "hello" and replay["got"][0]["botcheck"]["nonce"]
        assert [g["code"] for g in replay["got"][1:]] == ["bot_refused"]


def test_raw_websocket_client_without_the_widget_is_refused(
    browser_tools: str, botcheck_server: LiveServer
) -> None:
    result = run(browser_tools, botcheck_server, "raw")
    got = result["raw"]["got"]
    assert got[0]["type"] == "hello" and got[0]["botcheck"]["mode"] == "enforce"
    assert got[1] == {"type": "error", "code": "bot_check_required", "botcheck": None}
    assert result["raw"]["closeCode"] == 4403
