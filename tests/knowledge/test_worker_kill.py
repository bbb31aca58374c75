"""Kill -9 a real Celery worker in the middle of an ingestion, start another: the
document ends ready with every chunk exactly once (acks_late + reject_on_worker_lost +
an idempotent, atomic ingestion). Real Redis broker, real PostgreSQL test database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from knowledge import services
from knowledge.models import Chunk, Document
from knowledge.tasks import document_ingest_task

pytestmark = [pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[2]


def _worker(queue: str, log: Path) -> subprocess.Popen[bytes]:
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
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "tests.knowledge.celery_worker",
            "worker",
            "-Q",
            queue,
            "--concurrency=1",
            "--pool=prefork",
            "--loglevel=INFO",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ],
        cwd=ROOT,
        env=env,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: kill -9 takes the children too
    )


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def _wait(predicate: Any, timeout_s: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}; worker log:\n{log.read_text()[-3000:]}")


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
    first = _worker(queue, log)
    second = None
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
        _kill(first)
        stuck = Document.objects.get(pk=doc.pk)
        assert stuck.status == "ingesting" and stuck.progress_done < stuck.progress_total
        assert not Chunk.objects.filter(document=doc).exists()  # nothing half-written
        second = _worker(queue, log)
        _wait(
            lambda: Document.objects.filter(pk=doc.pk, status="ready").exists(),
            150,
            "the re-delivered task to finish",
            log,
        )
    finally:
        _kill(first)
        if second is not None:
            _kill(second)
    doc.refresh_from_db()
    positions = list(
        Chunk.objects.filter(document=doc).order_by("position").values_list("position", flat=True)
    )
    assert positions == list(range(doc.chunk_count)) and doc.chunk_count > 40
    assert doc.attempts >= 2 and doc.ingested_hash == doc.content_hash
