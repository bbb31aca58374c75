"""Reads for the chat service (HackSoftware style: selectors read, services write)."""

from __future__ import annotations

from typing import Any

from .attachments import shopper_view
from .feedback import conversation_ratings
from .models import Attachment, Conversation, Message


def conversation_history(*, conversation_id: int, limit: int) -> list[dict[str, Any]]:
    rows = list(
        Message.objects.filter(conversation_id=conversation_id)
        .order_by("-created_at", "-id")
        .values("id", "role", "text", "status", "tier", "intent", "created_at", "metadata")[:limit]
    )
    rows.reverse()
    thumbs, _score = conversation_ratings(conversation_id=conversation_id)
    photos = {
        a.message_id: shopper_view(a)
        for a in Attachment.objects.filter(
            message_id__in=[row["id"] for row in rows if row["role"] == Message.Role.USER]
        )
    }
    return [
        {
            "message_id": row["id"],
            "role": row["role"],
            "text": row["text"],
            "status": row["status"],
            "tier": row["tier"],
            "intent": row["intent"],
            "created": row["created_at"].isoformat(),
            # The shopper's thumbs on this reply ("up"/"down"), so the widget redraws it.
            "rating": thumbs.get(row["id"]),
            # What the done frame carried, so a reload redraws the reply's Sources and
            # (on the last reply) the buttons of the question it still asks.
            "citations": (row["metadata"] or {}).get("citations") or [],
            "actions": (row["metadata"] or {}).get("actions") or [],
            "choices": (row["metadata"] or {}).get("choices") or [],
            # The shopper's photo (its own message), at a freshly signed link.
            "attachment": photos.get(row["id"]),
        }
        for row in rows
    ]


def conversation_score(*, conversation_id: int) -> int | None:
    """The shopper's 1-5 rating of the conversation, if given."""
    return conversation_ratings(conversation_id=conversation_id)[1]


def conversation_recent_turns(
    *, conversation_id: int, before_id: int, turns: int
) -> list[tuple[str, str]]:
    """The last complete exchanges before a message, for a chat model's context."""
    rows = list(
        Message.objects.filter(conversation_id=conversation_id, id__lt=before_id)
        .exclude(status__in=[Message.Status.STREAMING, Message.Status.ERROR])
        .exclude(text="")
        .order_by("-id")
        .values_list("role", "text")[: turns * 2]
    )
    rows.reverse()
    return [(role, text) for role, text in rows]


def conversation_language(*, conversation_id: int) -> str:
    """The conversation's language (``en``, ``zh``): what the server's own messages are
    written in (chatbot/refusals.py)."""
    language = (
        Conversation.objects.filter(pk=conversation_id).values_list("language", flat=True).first()
    )
    return language or "en"


def conversation_get(*, conversation_id: int) -> Conversation:
    return Conversation.objects.get(pk=conversation_id)
