"""Email out of the chat and the desk: one-time codes, tickets and ticket answers.

A turn or a desk action never waits on a mail server: with ``TIERDESK_EMAIL_ASYNC`` (the
default outside tests) the message is handed to the Celery task ``chatbot.email_send``,
which sends it through Django's email framework with ``EMAIL_TIMEOUT`` and retries a
mail server that is down or slow. Tests send at once, through the locmem backend.
The message (a one-time code included) sits in the broker until a worker sends it.
"""

from __future__ import annotations

import logging
import smtplib
from dataclasses import asdict, dataclass

from django.conf import settings
from django.core.mail import EmailMessage

from inference.jobs import task_enqueue

logger = logging.getLogger(__name__)

# What a retry may cure: the server was unreachable, hung up or timed out (smtplib's
# errors are OSErrors). A message it rejects for good (its sender or every recipient
# refused) is not retried.
RETRYABLE = (OSError,)
PERMANENT = (smtplib.SMTPRecipientsRefused, smtplib.SMTPSenderRefused)
MAX_RETRIES = 5


@dataclass(frozen=True)
class Email:
    subject: str
    body: str
    to: list[str]
    from_email: str | None = None  # None: DEFAULT_FROM_EMAIL
    kind: str = "mail"  # for the logs: code, ticket, ticket_answer


def email_deliver(email: Email) -> None:
    """Send now (Django's email framework; the SMTP backend honours EMAIL_TIMEOUT)."""
    EmailMessage(
        subject=email.subject, body=email.body, from_email=email.from_email, to=email.to
    ).send(fail_silently=False)
    logger.info("email sent kind=%s", email.kind)


def email_send(email: Email) -> None:
    """Send ``email`` in the background (Celery), or at once with TIERDESK_EMAIL_ASYNC off.
    Raises if it can be neither queued nor sent: the caller decides what that means."""
    if not email.to:
        raise ValueError("an email needs a recipient")
    if settings.TIERDESK_EMAIL_ASYNC:
        task_enqueue("chatbot.email_send", args=[asdict(email)])
        logger.info("email queued kind=%s", email.kind)
    else:
        email_deliver(email)
