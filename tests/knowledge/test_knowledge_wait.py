"""``manage.py knowledge_wait`` (called by ``make run`` before it says ready): it returns
once no document is pending or being ingested, prints the progress, and gives up after
its timeout without failing (the product answers from what is in)."""

from __future__ import annotations

import io
import time

import pytest
from django.core.management import call_command

from knowledge.models import Document
from knowledge.services import ingestion_progress

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_other_documents() -> None:
    # tests/knowledge leaves the demo knowledge base in the session's database; each
    # test here counts only its own rows (the deletion rolls back with the test).
    Document.objects.all().delete()


def _doc(title: str, status: str) -> Document:
    # Rows as the worker leaves them: this test is about waiting, not about ingesting.
    return Document.objects.create(title=title, language="en", text="x", status=status)


def run(**options: float) -> tuple[str, float]:
    out = io.StringIO()
    started = time.monotonic()
    call_command("knowledge_wait", stdout=out, **options)
    return out.getvalue(), time.monotonic() - started


def test_counts_each_state() -> None:
    S = Document.Status
    for i, status in enumerate((S.READY, S.READY, S.PENDING, S.INGESTING, S.FAILED)):
        _doc(f"d{i}", status)
    progress = ingestion_progress()
    assert (progress.ready, progress.waiting, progress.failed, progress.total) == (2, 2, 1, 5)


def test_returns_at_once_when_everything_is_in() -> None:
    _doc("a", Document.Status.READY)
    _doc("b", Document.Status.FAILED)
    text, seconds = run(timeout=30)
    assert "1/2 documents ready, 1 failed" in text and seconds < 5


def test_waits_for_pending_documents_then_gives_up_without_failing() -> None:
    _doc("a", Document.Status.READY)
    _doc("b", Document.Status.PENDING)
    text, seconds = run(timeout=1.5, interval=0.2)
    assert "1/2 documents ready" in text
    assert "still ingesting 1 documents" in text and seconds >= 1.5
