"""Personal data: retention, and one shopper's export and erasure (docs/security.md).

What Tierdesk keeps about a shopper lives in their conversations: the messages, the
client IP and user agent, ratings (``Feedback``) and bot-check rows (``BotCheck``), all
tied to ``Conversation.customer_id`` once the shopper is identified. Apps above this
one keep more (the desk's tickets); they add their part with ``shopper_data_register``,
so export and erase cover everything without this module importing them.

Photos (``Attachment``) belong to a conversation: exported with it (the bytes too),
deleted with it, and their files leave storage with their rows.

Retention (settings, 0 keeps for ever): ``privacy_purge`` runs daily from Celery beat,
over this app's data and every registered part's ``purge`` (the desk's tickets). It
deletes by age only, so it is idempotent and safe to run twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from .attachments import attachment_export
from .models import Attachment, BotCheck, Conversation, Feedback, Message

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ShopperData:
    """One app's part of a shopper's data: ``export`` returns JSON-able rows, ``erase``
    deletes them and returns how many went. Both take the customer id and the emails
    the shopper is known by (tickets are filed by email, not by customer id).
    ``purge`` applies that app's retention at ``now`` (daily, with the rest of
    ``privacy_purge``) and returns counts by kind; by age only, so it is idempotent."""

    name: str
    export: Callable[[str, list[str]], list[dict[str, Any]]]
    erase: Callable[[str, list[str]], int]
    purge: Callable[[datetime], dict[str, int]] | None = None


_REGISTRY: dict[str, ShopperData] = {}


def shopper_data_register(part: ShopperData) -> None:
    _REGISTRY[part.name] = part


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _conversations(customer_id: str) -> Any:
    return Conversation.objects.filter(customer_id=customer_id) if customer_id else None


def _conversations_export(customer_id: str, emails: list[str]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    conversations = _conversations(customer_id)
    if conversations is None:
        return rows
    for conversation in conversations.prefetch_related(
        "messages", "feedback", "bot_checks", "attachments"
    ):
        rows.append(
            {
                "id": str(conversation.public_id),
                "created_at": _iso(conversation.created_at),
                "language": conversation.language,
                "identified_by": conversation.identity,
                "client_ip": conversation.client_ip,
                "user_agent": conversation.user_agent,
                "messages": [
                    {
                        "at": _iso(m.created_at),
                        "from": m.role,
                        "text": m.text,
                        "language": m.language,
                    }
                    for m in conversation.messages.all()
                ],
                "ratings": [
                    {"at": _iso(f.created_at), "kind": f.kind, "value": f.value}
                    for f in conversation.feedback.all()
                ],
                "bot_checks": [
                    {"at": _iso(b.created_at), "action": b.action, "reason": b.reason}
                    for b in conversation.bot_checks.all()
                ],
                "attachments": [attachment_export(a) for a in conversation.attachments.all()],
            }
        )
    return rows


def _conversations_erase(customer_id: str, emails: list[str]) -> int:
    conversations = _conversations(customer_id)
    if conversations is None:
        return 0
    # Messages, ratings, bot-check rows and photos go with their conversation (CASCADE;
    # each photo's file is deleted from storage with its row: chatbot/attachments.py).
    deleted, _ = conversations.delete()
    return int(deleted)


shopper_data_register(ShopperData("conversations", _conversations_export, _conversations_erase))


def shopper_export(*, customer_id: str, emails: list[str] | None = None) -> dict[str, Any]:
    """Everything kept about one shopper, as one JSON-able document."""
    emails = [e.lower() for e in emails or []]
    document: dict[str, Any] = {
        "customer_id": customer_id,
        "emails": emails,
        "exported_at": timezone.now().isoformat(),
    }
    for name, part in _REGISTRY.items():
        document[name] = part.export(customer_id, emails)
    logger.info("shopper data exported parts=%s", ",".join(_REGISTRY))
    return document


def shopper_erase(*, customer_id: str, emails: list[str] | None = None) -> dict[str, int]:
    """Delete everything kept about one shopper, in one transaction; returns counts."""
    emails = [e.lower() for e in emails or []]
    with transaction.atomic():
        counts = {name: part.erase(customer_id, emails) for name, part in _REGISTRY.items()}
    logger.info("shopper data erased counts=%s", counts)
    return counts


def privacy_purge(*, now: datetime | None = None) -> dict[str, int]:
    """Apply the retention settings (days; 0 keeps for ever). Idempotent."""
    now = now or timezone.now()
    counts = {
        "conversations": 0,
        "attachments": 0,
        "client_ips": 0,
        "feedback": 0,
        "bot_checks": 0,
    }

    def cutoff(days: int) -> datetime | None:
        return now - timedelta(days=days) if days > 0 else None

    if (before := cutoff(settings.TIERDESK_RETENTION_MESSAGES_DAYS)) is not None:
        # A conversation silent for the whole period goes with everything in it.
        stale = Conversation.objects.filter(updated_at__lt=before)
        counts["conversations"] = stale.count()
        stale.delete()
        # Single old messages and photos in conversations still in use go too (a photo
        # left in the ticket form has no message); files leave storage with their rows.
        Message.objects.filter(created_at__lt=before).delete()
        counts["attachments"], _ = Attachment.objects.filter(created_at__lt=before).delete()
    if (before := cutoff(settings.TIERDESK_RETENTION_CLIENT_IP_DAYS)) is not None:
        # update() leaves updated_at alone: forgetting an IP is not conversation activity.
        counts["client_ips"] = (
            Conversation.objects.filter(created_at__lt=before)
            .exclude(client_ip__isnull=True, user_agent="")
            .update(client_ip=None, user_agent="")
        )
    if (before := cutoff(settings.TIERDESK_RETENTION_FEEDBACK_DAYS)) is not None:
        counts["feedback"], _ = Feedback.objects.filter(created_at__lt=before).delete()
    if (before := cutoff(settings.TIERDESK_BOTCHECK_RETENTION_DAYS)) is not None:
        counts["bot_checks"], _ = BotCheck.objects.filter(created_at__lt=before).delete()
    # The apps above this one (the desk's tickets) apply their own retention.
    for part in _REGISTRY.values():
        if part.purge is not None:
            counts |= part.purge(now)
    logger.info("privacy purge %s", counts)
    return counts
