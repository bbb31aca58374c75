"""Storing verdicts (features only) and deleting them after the retention period."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from ..models import BotCheck, Message
from ..services import message_store
from .service import Verdict


def verdict_record(
    *, conversation_id: int, client_id: str, verdict: Verdict, message_id: int | None = None
) -> None:
    BotCheck.objects.create(
        conversation_id=conversation_id,
        message_id=message_id,
        client_id=client_id[:64],
        action=verdict.action,
        reason=verdict.reason,
        score=verdict.score,
        signals=list(verdict.signals),
        features=verdict.features,
    )


@dataclass(frozen=True)
class Stored:
    message: Message
    created: bool
    # A resend of a message stored earlier that has no reply yet: the process that
    # stored it died between the ack and the reply (Daphne killed, a deploy). The
    # resend is the only signal the shopper is still waiting, so it is answered now.
    unanswered: bool


def message_store_checked(
    *, conversation_id: int, client_id: str, text: str, verdict: Verdict | None
) -> Stored:
    """Store an allowed message and its verdict in one thread hop and one transaction:
    the verdict's INSERT shares the message's commit (one fsync, not two), which keeps
    what the bot check adds per message small (bench/bot.py)."""
    with transaction.atomic():
        message, created = message_store(
            conversation_id=conversation_id, client_id=client_id, text=text
        )
        if created and verdict is not None:
            verdict_record(
                conversation_id=conversation_id,
                client_id=client_id,
                verdict=verdict,
                message_id=message.pk,
            )
    unanswered = not created and not Message.objects.filter(reply_to_id=message.pk).exists()
    return Stored(message=message, created=created, unanswered=unanswered)


def botcheck_purge(*, now: datetime | None = None) -> int:
    """Delete verdicts older than the retention period; returns how many went."""
    days = int(settings.TIERDESK_BOTCHECK_RETENTION_DAYS)
    cutoff = (now or timezone.now()) - timedelta(days=days)
    deleted, _ = BotCheck.objects.filter(created_at__lt=cutoff).delete()
    return int(deleted)
