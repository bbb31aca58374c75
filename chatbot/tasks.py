"""Celery tasks of the chat app. They take ids (or nothing), and are idempotent."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from chatbot.mail import MAX_RETRIES, PERMANENT, RETRYABLE, Email, email_deliver


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


@shared_task(
    name="chatbot.email_send",
    acks_late=True,
    ignore_result=True,
    autoretry_for=RETRYABLE,
    dont_autoretry_for=PERMANENT,
    retry_backoff=2,
    retry_backoff_max=120,
    retry_jitter=True,
    max_retries=MAX_RETRIES,
)
def email_send(payload: dict[str, Any]) -> None:
    """One email (chatbot/mail.py), retried with backoff while the mail server fails or
    times out (EMAIL_TIMEOUT)."""
    email_deliver(Email(**payload))
