"""The widget keeps the shopper in the conversation (conversation_e2e.mjs, headless
Chromium against a real Daphne server, desktop and a 390x844 phone): a question's
options come as buttons, in view; a button and an item's name answer it; a reply that
lands while the shopper reads further up leaves them there and says "New message".
The desktop run's screenshot goes to docs/widget-choices.png."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .live import REPO, VIEWPORTS, LiveServer, node_scenario, viewport_args
from .test_widget import order_status

pytestmark = pytest.mark.browser

SCRIPT = Path(__file__).with_name("conversation_e2e.mjs")
DELIVERED = "#W3638028"  # James Li's: Indoor Security Camera + Jigsaw Puzzle, delivered
DOCS_SCREENSHOT = REPO / "docs" / "widget-choices.png"


@pytest.mark.parametrize("name", list(VIEWPORTS))
def test_buttons_in_view_and_new_message_below(
    browser_tools: str, daphne_server: LiveServer, tmp_path: Path, name: str
) -> None:
    shot = tmp_path / f"widget-choices-{name}.png"
    result = node_scenario(
        browser_tools,
        SCRIPT,
        daphne_server,
        name,
        *viewport_args(name),
        "--screenshot",
        str(shot),
    )
    assert not result["console_errors"], result
    which, items, confirm, done = result["steps"]
    # Which order: the delivered orders as buttons, all in view with the question.
    assert any(DELIVERED in b for b in which["buttons"]) and len(which["buttons"]) == 2
    assert all(which["buttons_in_view"]), which
    # The button picked the order; the items come as buttons (and "All of them").
    assert "2. Jigsaw Puzzle" in items["text"], items
    assert items["buttons"] == ["Indoor Security Camera", "Jigsaw Puzzle", "All of them"]
    assert all(items["buttons_in_view"]), items
    # "the puzzle" is the Jigsaw Puzzle; the confirmation's Yes/No are in view.
    assert "To confirm: return Jigsaw Puzzle" in confirm["text"], confirm
    assert confirm["buttons"] == ["Yes", "No"] and all(confirm["buttons_in_view"]), confirm
    # Answered while reading further up: the log stays put, "New message" shows, and
    # the answered question's buttons are gone.
    assert "haven't requested a return" in done["text"] and done["buttons"] == []
    assert not done["at_end"] and done["new_below"], done
    assert done["new_below_text"] == "New message \u2193"
    after = result["after_click"]
    assert after["at_end"] and after["last_in_view"] and not after["new_below"], after
    assert order_status(daphne_server.database_url, DELIVERED) == "delivered"
    if name == "desktop":
        shutil.copyfile(shot, DOCS_SCREENSHOT)
