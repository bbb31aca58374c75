"""A shop admin's article is not stuck behind the demo knowledge base's work: the demo
seed's articles (ingestion, generated questions, cards) go to the bulk queue, a shop
admin's to the default one, each drained by its own worker (scripts/run.sh).

Real Celery workers (``celery -A config worker``) on the real Redis broker and the
PostgreSQL test database; the bulk queue has a name of its own per run."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
from django.conf import settings as django_settings
from django.db import connection

from knowledge import services
from knowledge.models import AnswerCard, Document, SectionQuestion
from tests.faults import CeleryWorker, until

pytestmark = [pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[2]

DEMO = "# Demo {i}\n\n## Returns {i}\n\nItems can be returned within {i}0 days.\n"
OURS = "# Opening hours\n\n## When is the shop open?\n\nThe shop opens at nine on weekdays.\n"


def _worker(queues: str, bulk: str, default: str, log: Path) -> CeleryWorker:
    db = connection.settings_dict
    url = (
        f"postgres://{db['USER']}"
        + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
        + f"@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    )
    env = dict(
        os.environ,
        DATABASE_URL=url,
        TIERDESK_TEST_DB_NAME="",
        TIERDESK_KB_SUMMARY_ROLE="",
        TIERDESK_KB_BULK_QUEUE=bulk,
        CELERY_TASK_DEFAULT_QUEUE=default,
        TIERDESK_WARMUP_ON_START="false",
        HF_HUB_OFFLINE="1",
        PYTHONPATH=str(ROOT),
    )
    return CeleryWorker(env, log, extra=["-Q", queues, "--without-heartbeat"])


def _wait(predicate: Callable[[], bool], timeout_s: float, what: str, log: Path) -> None:
    assert until(predicate, timeout_s), (
        f"timed out waiting for {what}; worker log:\n{log.read_text()[-3000:]}"
    )


def test_a_shop_admins_article_is_drafted_while_the_demo_seed_waits_in_the_bulk_queue(
    tmp_path: Path, settings: Any
) -> None:
    from config.celery import app

    run = uuid.uuid4().hex[:8]
    # Both queues of this run only: another process on the same Redis database (an
    # evaluation, another test run) must neither take these tasks nor hand us its own.
    bulk, default = f"bulk-test-{run}", f"default-test-{run}"
    settings.TIERDESK_KB_BULK_QUEUE = bulk
    previous = app.conf.task_default_queue
    app.conf.task_default_queue = default
    try:
        _scenario(tmp_path, bulk, default)
    finally:
        app.conf.task_default_queue = previous


def _scenario(tmp_path: Path, bulk: str, default: str) -> None:
    broker = redis.Redis.from_url(django_settings.CELERY_BROKER_URL)
    demo = [
        services.document_create(
            title=f"Demo {i}", text=DEMO.format(i=i), source_format="markdown", seed_key=f"d-{i}"
        )
        for i in range(1, 4)
    ]
    ours = services.document_create(title="Opening hours", text=OURS, source_format="markdown")
    assert broker.llen(bulk) == 3  # the demo's three ingestions, queued first
    assert broker.llen(default) == 1  # the admin's, after them

    log = tmp_path / "worker.log"
    worker = _worker(default, bulk, default, log)
    worker.start()
    try:
        _wait(
            lambda: (
                AnswerCard.objects.filter(document=ours).exists()
                and SectionQuestion.objects.filter(document=ours).exists()
            ),
            300,
            "the admin's article to be ingested, its questions written and cards drafted",
            log,
        )
        assert Document.objects.get(pk=ours.pk).status == Document.Status.READY
        # The demo's work is still waiting, untouched, in its own queue.
        assert broker.llen(bulk) == 3
        assert set(
            Document.objects.filter(pk__in=[d.pk for d in demo]).values_list("status", flat=True)
        ) == {Document.Status.PENDING}
    finally:
        worker.kill9()

    bulk_log = tmp_path / "bulk.log"
    bulk_worker = _worker(bulk, bulk, default, bulk_log)
    bulk_worker.start()
    try:
        # The bulk worker ingests the demo and, on its own queue, drafts it.
        _wait(
            lambda: (
                AnswerCard.objects.filter(document__in=demo).count() == 3
                and SectionQuestion.objects.filter(document__in=demo)
                .values("document")
                .distinct()
                .count()
                == 3
            ),
            300,
            "the demo articles to be ingested and drafted by the bulk worker",
            bulk_log,
        )
    finally:
        bulk_worker.kill9()
        broker.delete(bulk, default)
