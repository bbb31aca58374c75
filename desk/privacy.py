"""The desk's part of a shopper's personal data (chatbot/privacy.py): tickets, filed by
email or linked to the shopper's conversations, and the agents' notes on those
conversations. Notes go with their conversation on erase (CASCADE); tickets are
deleted here, with the photos attached to them (their files leave storage with their
rows: chatbot/attachments.py)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q

from chatbot.attachments import attachment_export
from chatbot.models import Attachment
from chatbot.privacy import ShopperData

from .models import Note, Ticket


def _tickets(customer_id: str, emails: list[str]) -> Any:
    match = Q(email__in=emails) if emails else Q(pk__in=[])
    for email in emails:
        match |= Q(email__iexact=email)
    if customer_id:
        match |= Q(conversation__customer_id=customer_id)
    return Ticket.objects.filter(match)


def desk_export(customer_id: str, emails: list[str]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = [
        {
            "ticket": t.pk,
            "email": t.email,
            "question": t.question,
            "answer": t.answer,
            "status": t.status,
            "created_at": t.created_at.isoformat(),
            "attachments": [attachment_export(a) for a in t.attachments.all()],
        }
        for t in _tickets(customer_id, emails).prefetch_related("attachments")
    ]
    if customer_id:
        rows += [
            {"note": n.pk, "text": n.text, "created_at": n.created_at.isoformat()}
            for n in Note.objects.filter(conversation__customer_id=customer_id)
        ]
    return rows


def _with_photos(tickets: Any) -> int:
    """Delete tickets and the photos attached to them; returns the tickets deleted."""
    photos = Attachment.objects.filter(tickets__in=tickets)
    Attachment.objects.filter(pk__in=list(photos.values_list("pk", flat=True))).delete()
    deleted = tickets.model.objects.filter(pk__in=list(tickets.values_list("pk", flat=True)))
    return int(deleted.delete()[1].get("desk.Ticket", 0))


def desk_erase(customer_id: str, emails: list[str]) -> int:
    return _with_photos(_tickets(customer_id, emails))


def desk_purge(now: datetime) -> dict[str, int]:
    """Tickets past TIERDESK_RETENTION_TICKETS_DAYS (0 keeps them): an open ticket by
    the day it was left, an answered one by the day it was answered. Their audit events
    stay, without the ticket (SET_NULL)."""
    days = settings.TIERDESK_RETENTION_TICKETS_DAYS
    if days <= 0:
        return {"tickets": 0}
    before = now - timedelta(days=days)
    stale = Ticket.objects.filter(created_at__lt=before).filter(
        Q(answered_at__isnull=True) | Q(answered_at__lt=before)
    )
    return {"tickets": _with_photos(stale)}


DESK_DATA = ShopperData("desk", desk_export, desk_erase, desk_purge)
