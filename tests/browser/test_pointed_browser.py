"""Issue #33 item 4 in headless Chromium against a real Daphne (pointed_e2e.mjs): a
shopper asks a question that a made-up help article is about but doesn't confirm, and
sees the article's section quoted, its source, and the offer of a person. Writes
docs/widget-pointed.png when TIERDESK_DOCS_SCREENSHOTS=1."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.knowledge.test_pointing import BIKES_EN

from .live import REPO, LiveServer, _manage, live_server_run, node_scenario, server_env

pytestmark = pytest.mark.browser

SCRIPT = Path(__file__).with_name("pointed_e2e.mjs")
# The article is added as a support admin adds one: saved, then ingested.
ARTICLE = (
    "from knowledge import services;"
    "d = services.document_create(title='Bicycle delivery', text={text!r}, language='en',"
    " source_format='markdown');"
    "services.document_ingest(document_id=d.pk)"
)


@pytest.fixture(scope="module")
def pointed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A server of its own: articles other browser tests leave on the shared one answer
    other questions, and which of them ran first depends on the suite's order."""
    with live_server_run(tmp_path_factory.mktemp("daphne-pointed"), name="pointed") as server:
        yield server


def test_a_question_the_articles_are_about_gets_the_quote_its_source_and_a_person(
    browser_tools: str, pointed_server: LiveServer, tmp_path: Path
) -> None:
    env = server_env(pointed_server.database_url)
    _manage(env, pointed_server.log, "shell", "-c", ARTICLE.format(text=BIKES_EN))
    shot = (
        REPO / "docs" / "widget-pointed.png"
        if os.environ.get("TIERDESK_DOCS_SCREENSHOTS")
        else tmp_path / "widget-pointed.png"
    )
    result = node_scenario(
        browser_tools,
        SCRIPT,
        pointed_server,
        "pointed",
        "--question",
        "does the bicycle frame warranty cover rust on the chain?",
        "--screenshot",
        str(shot),
    )
    reply = result["reply"]
    assert reply.startswith('Our "Bicycle delivery" article says: "Every frame has'), result
    assert "I can't confirm" in reply and "a person on our team" in reply
    assert result["sources_open"] and "Bicycle delivery" in result["sources"]
    assert "Frame warranty" in result["sources"]
    assert result["buttons"] == ["Yes", "No"], result
    assert result["done"]["pointed"]["why"] == "not_confirmed"
    assert result["done"]["actions"] == ["offer:human"]
    assert shot.stat().st_size > 10_000
