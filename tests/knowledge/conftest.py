"""Fixtures for the knowledge base: a slice of the demo knowledge base, really
ingested (real embedder, real chunking) into the test database.

Summaries here are extractive (TIERDESK_KB_SUMMARY_ROLE="") so a fixture costs a few
seconds, not a model run per document; test_ingest.py runs the fast model's summary
once for real.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from knowledge import index
from knowledge.cards import cards_reset

# Three English FAQ articles, the returns policy, two Chinese articles.
KB_KEYS = [
    "en-pricing-faq",
    "en-jeans-faq",
    "en-boots-faq",
    "en-returns",
    "zh-shipping",
    "zh-care-jackets-boots",
]


@pytest.fixture(autouse=True)
def _fresh_index(settings: Any) -> Iterator[None]:
    """Every test starts from an empty in-process index and checks the database on
    every search (no refresh interval), so nothing leaks between tests."""
    settings.TIERDESK_KB_REFRESH_S = 0.0
    settings.TIERDESK_KB_SUMMARY_ROLE = ""
    index.reset()
    cards_reset()
    yield
    index.reset()
    cards_reset()


@pytest.fixture(scope="module")
def _kb_present(django_db_setup: None, django_db_blocker: Any) -> Iterator[dict[str, int]]:
    """Seeded and ingested, committed, once per module (ingestion is the slow part); each
    test's own changes roll back. Module-scoped so that it is set up before the test's
    own transaction begins: function-scoped, it ran inside that transaction, was rolled
    back with it, and every test ingested the articles again (10 times in
    test_retrieval.py, 55 of its 66 s). Per module, not per session: a transactional
    test in another module flushes the tables, and under pytest-xdist a worker runs the
    modules in an order of its own. In between, ``knowledge_seed`` finds every document
    there and ready and does nothing.

    The tables are flushed after the module, as a transactional test's are: the next
    module on this worker expects an empty database, and a later test found these
    articles answering its questions."""
    from django.core.management import call_command
    from django.test import override_settings

    from knowledge.seed import knowledge_seed

    with django_db_blocker.unblock(), override_settings(TIERDESK_KB_SUMMARY_ROLE=""):
        seeded = knowledge_seed(ingest_now=True, keys=KB_KEYS)
    yield seeded
    with django_db_blocker.unblock():
        call_command("flush", interactive=False, verbosity=0)


@pytest.fixture
def kb(_kb_present: dict[str, int], db: None) -> dict[str, int]:
    # _kb_present first: it commits, outside the test's transaction.
    return _kb_present


def doc_id(key: str) -> int:
    from knowledge.models import Document

    return Document.objects.get(seed_key=key).pk
