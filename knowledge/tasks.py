"""Celery tasks for the knowledge base. They take ids, re-fetch, and are idempotent.

``acks_late`` + ``reject_on_worker_lost`` (settings) mean a worker killed mid-task
leaves the message on the broker, and another worker runs the task again from the
start; ``knowledge.services.document_ingest`` makes that re-run safe.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.conf import settings

logger = logging.getLogger(__name__)


@shared_task(bind=True, name="knowledge.document_ingest", acks_late=True, max_retries=None)
def document_ingest_task(self: Any, document_id: int, force: bool = False) -> str:
    from knowledge import services

    try:
        outcome = services.document_ingest(document_id=document_id, force=force)
    except services.IngestError as exc:
        # The document is bad (no text, broken PDF): retrying can't fix it.
        services.document_fail(document_id=document_id, error=str(exc))
        return "failed"
    except Exception as exc:
        attempt = self.request.retries + 1
        if attempt > settings.TIERDESK_KB_INGEST_RETRIES:
            logger.exception("ingestion of document %s failed for good", document_id)
            services.document_fail(document_id=document_id, error=f"{type(exc).__name__}: {exc}")
            return "failed"
        logger.warning(
            "ingestion of document %s failed (attempt %d): %s", document_id, attempt, exc
        )
        services.document_retrying(document_id=document_id, error=str(exc), attempt=attempt)
        raise self.retry(exc=exc, countdown=min(60, 5 * 2**self.request.retries)) from exc
    return outcome.result


@shared_task(name="knowledge.ingest_sweep")
def ingest_sweep_task() -> int:
    """Beat: enqueue again the ingestions a broker lost (``ingest_requeue_stale``)."""
    from knowledge import services

    return len(services.ingest_requeue_stale(older_than_s=settings.TIERDESK_KB_REQUEUE_AFTER_S))


@shared_task(name="knowledge.cards_sync", acks_late=True)
def cards_sync_task(document_id: int) -> dict[str, int]:
    """After an ingestion: draft the answer cards of new or changed sections
    (``knowledge.cards.cards_sync``; idempotent, unchanged sections are kept)."""
    from knowledge.cards import cards_sync

    return cards_sync(document_id=document_id)


@shared_task(name="knowledge.conflicts_check", acks_late=True)
def conflicts_check_task(document_id: int) -> dict[str, int]:
    """After an ingestion or a deletion: open or close the document's conflicts with
    other articles (``knowledge.conflicts.conflicts_check``; idempotent, a few
    milliseconds of numpy, so it never holds the queue up like a model call)."""
    from knowledge.conflicts import conflicts_check

    return conflicts_check(document_id=document_id)


@shared_task(name="knowledge.section_questions_sync", acks_late=True)
def section_questions_sync_task(document_id: int) -> dict[str, int]:
    """After an ingestion: write and embed the generated questions of new or changed
    sections (``knowledge.section_questions``; idempotent)."""
    from knowledge.section_questions import section_questions_sync

    return section_questions_sync(document_id=document_id)
