"""Issue #16 item 3 in the browser: a shopper beyond the server's capacity sees "busy,
you are number n in line" (never an error), can type meanwhile, and is answered once
served. A live Daphne with TIERDESK_WS_ACTIVE_MAX=1; the screenshot goes to docs/."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from .live import REPO, LiveServer, live_server_run, node_scenario

pytestmark = pytest.mark.browser

SCRIPT = Path(__file__).with_name("busy_e2e.mjs")
DOCS_SCREENSHOT = REPO / "docs" / "widget-busy.png"


@pytest.fixture(scope="module")
def one_seat_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server_run(
        tmp_path_factory.mktemp("daphne-busy"),
        env_extra={"TIERDESK_WS_ACTIVE_MAX": "1"},
        name="busy",
    ) as server:
        yield server


def test_second_shopper_waits_in_line_then_is_answered(
    browser_tools: str, one_seat_server: LiveServer, tmp_path: Path
) -> None:
    shot = tmp_path / "busy.png"
    result = node_scenario(
        browser_tools, SCRIPT, one_seat_server, "busy", "--screenshot", str(shot)
    )
    assert result["position"] == "1"
    busy = result["busy_status"]
    assert not busy["hidden"] and "number 1 in line" in busy["text"], busy
    assert result["first_status"]["hidden"]  # the one being served sees nothing unusual
    assert result["answered_while_waiting"] is False
    assert result["after_status"]["hidden"], result["after_status"]
    frames = result["frames"]
    assert "busy:1" in frames and "busy:0" in frames and "done" in frames, frames
    assert "error" not in frames and not result["errors"]
    assert shot.stat().st_size > 10_000
    if not DOCS_SCREENSHOT.exists() or os.environ.get("TIERDESK_UPDATE_SCREENSHOTS") == "1":
        shutil.copyfile(shot, DOCS_SCREENSHOT)
