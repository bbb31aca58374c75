"""Kill -9 a real Celery worker in the middle of an ingestion, start another: the
document ends ready with every chunk exactly once (acks_late + reject_on_worker_lost +
an idempotent, atomic ingestion). Real Redis broker, real PostgreSQL test database."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from django.db import connection

from knowledge import services
from knowledge.models import Chunk, Document
from knowledge.tasks import document_ingest_task
from tests.faults import CeleryWorker, until

pytestmark = [pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[2]


def _worker(queue: str, log: Path) -> CeleryWorker:
    """The test app (tests/knowledge/celery_worker.py) on a queue of its own, against
    the test database."""
    settings_db = connection.settings_dict
    url = (
        f"postgres://{settings_db['USER']}"
        + (f":{settings_db['PASSWORD']}" if settings_db.get("PASSWORD") else "")
        + f"@{settings_db['HOST'] or '127.0.0.1'}:{settings_db['PORT'] or 5432}"
        + f"/{settings_db['NAME']}"
    )
    env = dict(
        os.environ,
        DATABASE_URL=url,
        TIERDESK_TEST_DB_NAME="",
        TIERDESK_KB_SUMMARY_ROLE="",
        TIERDESK_WARMUP_ON_START="false",
        HF_HUB_OFFLINE="1",
        PYTHONPATH=str(ROOT),
    )
    extra = ["-Q", queue, "--without-heartbeat"]
    return CeleryWorker(env, log, app="tests.knowledge.celery_worker", extra=extra)


def _wait(predicate: Callable[[], bool], timeout_s: float, what: str, log: Path) -> None:
    assert until(predicate, timeout_s), (
        f"timed out waiting for {what}; worker log:\n{log.read_text()[-3000:]}"
    )


def test_kill_9_mid_ingest_then_restart_ends_ready_without_missing_or_duplicate_chunks(
    tmp_path: Path,
) -> None:
    sections = "\n\n".join(
        f"## Topic {i}\n\n"
        + " ".join(f"Sentence {i}.{j} about care rule number {j}." for j in range(30))
        for i in range(40)
    )
    doc = services.document_create(
        title="Long care guide",
        language="en",
        source_format="markdown",
        text="# Care\n\n" + sections,
    )
    queue = f"kb-test-{uuid.uuid4().hex[:8]}"
    log = tmp_path / "worker.log"
    worker = _worker(queue, log)
    worker.start()
    try:
        document_ingest_task.apply_async(args=[doc.pk, False], queue=queue)
        # Kill it once it is visibly embedding (some progress, not finished).
        _wait(
            lambda: Document.objects.filter(
                pk=doc.pk, status="ingesting", progress_done__gt=0
            ).exists(),
            120,
            "ingestion to start",
            log,
        )
        worker.kill9()
        stuck = Document.objects.get(pk=doc.pk)
        assert stuck.status == "ingesting" and stuck.progress_done < stuck.progress_total
        assert not Chunk.objects.filter(document=doc).exists()  # nothing half-written
        worker.start()  # a new worker: the broker hands it the unacknowledged task
        _wait(
            lambda: Document.objects.filter(pk=doc.pk, status="ready").exists(),
            150,
            "the re-delivered task to finish",
            log,
        )
    finally:
        worker.kill9()
    doc.refresh_from_db()
    positions = list(
        Chunk.objects.filter(document=doc).order_by("position").values_list("position", flat=True)
    )
    assert positions == list(range(doc.chunk_count)) and doc.chunk_count > 40
    assert doc.attempts >= 2 and doc.ingested_hash == doc.content_hash
