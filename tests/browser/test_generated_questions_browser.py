"""In Chromium: a support admin edits a section's generated questions on the answer
card's page. "How much to make my present look pretty with paper and a bow?" gets no
card; the admin adds how shoppers ask it to the "Gift wrapping" card's questions, saves,
the page lists it as the admin's own, and "Try a question" shows the approved card
serving that question now, matched by its generated questions (generated_questions.mjs).

The server is real (Daphne) on a database of its own, with one article ingested, its
questions written and its card approved here (no worker: the scenario is the admin's
edit, not ingestion). Writes docs/admin-generated-questions.png when
TIERDESK_DOCS_SCREENSHOTS=1."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from .live import REPO, LiveServer, _manage, live_server_run, server_env

pytestmark = pytest.mark.browser

SCRIPT = Path(__file__).with_name("generated_questions.mjs")
ARTICLE = (
    "# Gifts\\n\\n## Gift wrapping\\n\\n"
    "We gift wrap any item for $5.99 per item, with a card carrying your message.\\n\\n"
    "## Gift receipts\\n\\nA gift receipt shows no prices and is free on request.\\n"
)
PREPARE = (
    "from django.contrib.auth import get_user_model; U = get_user_model();"
    "U.objects.filter(username='q_admin').exists() or "
    "U.objects.create_superuser('q_admin', 'q@example.com', 'q_admin');"
    "from knowledge import cards, services;"
    "from knowledge.models import AnswerCard, Document;"
    "from knowledge.section_questions import section_questions_sync;"
    "Document.objects.all().delete();"
    f"d = services.document_create(title='Gifts', text='{ARTICLE}', source_format='markdown');"
    "assert services.document_ingest(document_id=d.pk).result == 'ready';"
    "section_questions_sync(document_id=d.pk); cards.cards_sync(document_id=d.pk);"
    "ids = list(AnswerCard.objects.values_list('pk', flat=True));"
    "cards.card_review(card_ids=ids, status='approved', user_id=None)"
)


@pytest.fixture(scope="module")
def questions_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    tmp = tmp_path_factory.mktemp("daphne-questions")
    with live_server_run(tmp, name="questions", warm_up=False) as server:
        env = server_env(
            server.database_url,
            {"TIERDESK_KB_SUMMARY_ROLE": "", "TIERDESK_KB_QUESTIONS_ROLE": ""},
        )
        _manage(env, server.log, "shell", "-c", PREPARE)
        yield server


def test_admin_adds_a_generated_question_and_the_question_starts_to_match(
    browser_tools: str, questions_server: LiveServer, tmp_path: Path
) -> None:
    shot = (
        REPO / "docs" / "admin-generated-questions.png"
        if os.environ.get("TIERDESK_DOCS_SCREENSHOTS")
        else tmp_path / "admin-generated-questions.png"
    )
    cmd = [
        browser_tools,
        str(SCRIPT),
        "--base",
        questions_server.url,
        "--user",
        "q_admin",
        "--password",
        "q_admin",
        "--screenshot",
        str(shot),
    ]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    result = json.loads(lines[-1]) if lines else {}
    if proc.returncode != 0 or not result.get("ok"):
        pytest.fail(
            f"scenario failed: {result.get('error') or proc.stdout[-2000:]}\n"
            f"stderr: {proc.stderr[-2000:]}\n"
            f"server log:\n{questions_server.log.read_text(errors='replace')[-3000:]}"
        )
    # Before: the question finds no card.
    assert result["card_before"] == "", result
    # The card's page lists the generated questions, as written by the worker.
    assert "How much does gift wrapping cost?" in result["generated_before"]
    # After the admin's line: listed as the admin's own, and the card serves the question.
    assert "How much is it to have my present wrapped" in result["table_after"]
    assert "written by a support admin" in result["table_after"]
    # The admin's own question is listed first, in the box and in the table.
    assert result["box_after"].startswith("How much is it to have my present wrapped")
    assert "Gift wrapping" in result["card_after"], result
    assert "generated-question" in result["card_after"], result
    assert result["errors"] == [], result["errors"]
    assert shot.exists() and shot.stat().st_size > 10_000
