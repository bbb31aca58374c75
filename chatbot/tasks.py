"""Celery tasks of the chat app. They take ids (or nothing), and are idempotent."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="chatbot.botcheck_purge", acks_late=True, ignore_result=True)
def botcheck_purge() -> int:
    """Celery beat, daily: delete bot-check features past TIERDESK_BOTCHECK_RETENTION_DAYS."""
    from chatbot.botcheck.store import botcheck_purge as purge

    return purge()


@shared_task(name="chatbot.privacy_purge", acks_late=True, ignore_result=True)
def privacy_purge() -> dict[str, int]:
    """Celery beat, daily: apply the personal-data retention settings (by age only,
    so running it twice deletes nothing more)."""
    from chatbot.privacy import privacy_purge as purge

    return purge()
