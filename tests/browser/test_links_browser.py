"""Links in headless Chromium against a real Daphne (links_e2e.mjs): the carrier's
tracking address in a late-order reply is a link that opens in a new tab without the
opener, and a source under a knowledge reply opens the article's public help page at
the cited section. Writes docs/help-article.png when TIERDESK_DOCS_SCREENSHOTS=1."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.knowledge.test_pointing import BIKES_EN

from .live import REPO, LiveServer, _manage, node_scenario, server_env

pytestmark = pytest.mark.browser

SCRIPT = Path(__file__).with_name("links_e2e.mjs")
ARTICLE = (
    "from knowledge import services;"
    "d = services.document_create(title='Bicycle delivery', text={text!r}, language='en',"
    " source_format='markdown');"
    "services.document_ingest(document_id=d.pk)"
)


def test_reply_addresses_are_links_and_sources_open_the_help_page(
    browser_tools: str, daphne_server: LiveServer, tmp_path: Path
) -> None:
    env = server_env(daphne_server.database_url)
    _manage(env, daphne_server.log, "shell", "-c", ARTICLE.format(text=BIKES_EN))
    shot = (
        REPO / "docs" / "help-article.png"
        if os.environ.get("TIERDESK_DOCS_SCREENSHOTS")
        else tmp_path / "help-article.png"
    )
    result = node_scenario(
        browser_tools,
        SCRIPT,
        daphne_server,
        "links",
        "--order-question",
        "where is my order #W2611340?",
        "--question",
        "does the bicycle frame warranty cover rust on the chain?",
        "--screenshot",
        str(shot),
    )
    assert result["errors"] == [], result["errors"]
    links = result["order_links"]
    assert links, result["order_reply"]
    assert all(a["href"].startswith(("http://", "https://")) for a in links), links
    assert all(a["target"] == "_blank" and "noopener" in a["rel"] for a in links), links
    # The link is the address itself, without the sentence's punctuation.
    assert all(a["href"].rstrip("/") in result["order_reply"] for a in links), links

    sources = result["source_links"]
    assert sources and sources[0]["text"] == "Bicycle delivery", sources
    assert "/help/" in sources[0]["href"] and sources[0]["target"] == "_blank", sources
    assert result["help_url"] == sources[0]["href"]
    assert result["help_title"] == "Bicycle delivery"
    assert result["help_lang"] == "en"
    assert result["target_heading"] == "Frame warranty", result
    assert result["target_in_view"], result
    assert shot.stat().st_size > 10_000
