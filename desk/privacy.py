"""The desk's part of a shopper's personal data (chatbot/privacy.py): tickets, filed by
email or linked to the shopper's conversations, and the agents' notes on those
conversations. Notes go with their conversation on erase (CASCADE); tickets are
deleted here."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q

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
        }
        for t in _tickets(customer_id, emails)
    ]
    if customer_id:
        rows += [
            {"note": n.pk, "text": n.text, "created_at": n.created_at.isoformat()}
            for n in Note.objects.filter(conversation__customer_id=customer_id)
        ]
    return rows


def desk_erase(customer_id: str, emails: list[str]) -> int:
    deleted, _ = _tickets(customer_id, emails).delete()
    return int(deleted)


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
    deleted, _ = stale.delete()
    return {"tickets": int(deleted)}


DESK_DATA = ShopperData("desk", desk_export, desk_erase, desk_purge)
