"""Issue #33, in Chromium: a support admin teaches the bot a shop word. The demo's
synonym sets are in Django admin (seeded by seed_demo); "can I wash my dungarees?"
finds nothing, the admin adds "dungarees" to the "denim, jeans" set with "Save and see
the questions it changes", the page lists the question (nothing before, the Jeans FAQ
after), and "Try a question" shows the expanded terms and the section the bot finds
now (synonyms_e2e.mjs).

The server is real (Daphne) on a database of its own, with only the Jeans FAQ
ingested. Writes docs/admin-synonyms.png when TIERDESK_DOCS_SCREENSHOTS=1."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from .live import REPO, LiveServer, _manage, live_server_run, server_env

pytestmark = pytest.mark.browser

SCRIPT = Path(__file__).with_name("synonyms_e2e.mjs")
ADMIN = (
    "from django.contrib.auth import get_user_model; U = get_user_model();"
    "U.objects.filter(username='words_admin').exists() or "
    "U.objects.create_superuser('words_admin', 'w@example.com', 'words_admin')"
)
# One article, ingested here (no worker): the scenario is about the words, not ingestion.
ONLY_JEANS = (
    "from knowledge.models import Document;"
    "Document.objects.exclude(seed_key='en-jeans-faq').delete()"
)


@pytest.fixture(scope="module")
def words_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    tmp = tmp_path_factory.mktemp("daphne-synonyms")
    with live_server_run(tmp, name="synonyms", warm_up=False) as server:
        env = server_env(server.database_url, {"TIERDESK_KB_SUMMARY_ROLE": ""})
        _manage(env, server.log, "shell", "-c", ADMIN)
        _manage(env, server.log, "shell", "-c", ONLY_JEANS)
        _manage(env, server.log, "knowledge_ingest")
        yield server


def test_admin_adds_a_word_and_the_question_starts_to_match(
    browser_tools: str, words_server: LiveServer, tmp_path: Path
) -> None:
    shot = (
        REPO / "docs" / "admin-synonyms.png"
        if os.environ.get("TIERDESK_DOCS_SCREENSHOTS")
        else tmp_path / "admin-synonyms.png"
    )
    cmd = [
        browser_tools,
        str(SCRIPT),
        "--base",
        words_server.url,
        "--user",
        "words_admin",
        "--password",
        "words_admin",
        "--screenshot",
        str(shot),
    ]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    result = json.loads(lines[-1]) if lines else {}
    if proc.returncode != 0 or not result.get("ok"):
        pytest.fail(
            f"synonyms scenario failed: {result.get('error') or proc.stdout[-2000:]}\n"
            f"stderr: {proc.stderr[-2000:]}\n"
            f"server log:\n{words_server.log.read_text(errors='replace')[-3000:]}"
        )
    before, after = result["before"], result["after"]
    assert "No synonym set has any of these words." in before["terms"], before
    assert "nothing relevant" in before["match"], before
    assert result["terms_before"] == "denim, jeans"

    assert result["summary"].startswith("1 of "), result["summary"]
    [row] = result["rows"]
    assert row[0] == "can I wash my dungarees?"
    assert "nothing relevant" in row[1] and "Jeans FAQ" in row[2], row

    assert "dungare, denim, jean" in after["expanded"], after
    assert "Jeans FAQ" in after["match"], after
    assert result["errors"] == [], result["errors"]
    assert shot.stat().st_size > 20_000
