"""A return in the widget, in headless Chromium against a real Daphne server (issue #17
item 5): items listed, the policy stated, an explicit "yes", the order then "return
requested" in the server's own database; the screenshot goes to docs/widget-return.png."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .live import REPO, LiveServer
from .test_widget import order_status, run_scenario

pytestmark = pytest.mark.browser

DELIVERED = "#W3638028"  # James Li's: Indoor Security Camera + Jigsaw Puzzle, delivered
DOCS_SCREENSHOT = REPO / "docs" / "widget-return.png"


def test_a_return_in_the_widget(
    browser_tools: str, daphne_server: LiveServer, tmp_path: Path
) -> None:
    seeded = daphne_server  # live_server_run seeds the demo shop
    assert order_status(seeded.database_url, DELIVERED) == "delivered"
    shot = tmp_path / "widget-return.png"
    result = run_scenario(
        browser_tools, seeded, "returns", "--order", DELIVERED, "--screenshot", str(shot)
    )
    assert result.get("ok"), result
    listed, confirm, done = (r["text"] for r in result["replies"])
    assert all(r["tier"] == "L1" and not r["errors"] for r in result["replies"]), result
    assert "1. Indoor Security Camera" in listed and "2. Jigsaw Puzzle" in listed
    assert "To confirm: return Indoor Security Camera" in confirm
    assert "days from purchase" in confirm and "prepaid shipping label" in confirm
    assert 'Reply "yes"' in confirm
    assert "return of Indoor Security Camera" in done and "is requested" in done
    assert order_status(seeded.database_url, DELIVERED) == "return requested"
    assert shot.stat().st_size > 10_000
    shutil.copyfile(shot, DOCS_SCREENSHOT)
