"""The desk's services: what an agent may see and do, on top of ``chatbot.handoff``.

Every function here is synchronous (database, email); the consumer and the views call
them off the event loop. Access: an agent sees the queue and the conversations they
hold, nothing else (``conversation_detail`` raises ``DeskDenied`` for the rest).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from chatbot.answerers.order_format import money
from chatbot.handoff import (
    AGENTS_GROUP,
    HUMAN_TIER,
    H,
    agent_display_name,
    agents_group,
    agents_list,
    desk_group,
    group_frame_sync,
    handoff_claim,
    handoff_requeue_abandoned,
    handoff_resolve,
    handoff_transfer,
    human_holds,
    message_frame,
)
from chatbot.mail import Email, email_send
from chatbot.models import Attachment, Conversation, Message
from chatbot.orders.backends import get_order_service
from chatbot.orders.types import OrderServiceError

from .models import AuditEvent, Note, Ticket

logger = logging.getLogger(__name__)

DESK_PERMISSION = "desk.use_desk"
LAST_MESSAGES = 4
MAX_TICKET_PHOTOS = 5


def _uuid_like(value: str) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True


class DeskDenied(Exception):
    """The agent may not see or act on that conversation (or ticket)."""


def is_agent(user: Any) -> bool:
    return bool(user.is_authenticated and user.is_active and user.has_perm(DESK_PERMISSION))


# -- the inbox --------------------------------------------------------------------------------


def _visible(agent_id: int) -> Q:
    return Q(handoff=H.QUEUED) | Q(handoff=H.CLAIMED, handoff_agent_id=agent_id)


def inbox(*, agent_id: int) -> dict[str, Any]:
    """The queue (oldest first) and the agent's own conversations, with what an agent
    needs to pick one: wait, language, last messages, tiers the bot used, identity."""
    now = timezone.now()
    rows = list(
        Conversation.objects.filter(_visible(agent_id))
        .order_by("handoff_queued_at", "pk")
        .values(
            "pk",
            "public_id",
            "handoff",
            "handoff_queued_at",
            "language",
            "customer_id",
            "identity",
            "vip",
        )
    )
    ids = [row["pk"] for row in rows]
    last: dict[int, list[dict[str, Any]]] = {pk: [] for pk in ids}
    tiers: dict[int, set[str]] = {pk: set() for pk in ids}
    for message in (
        Message.objects.filter(conversation_id__in=ids)
        .exclude(text="")
        .order_by("-created_at", "-id")
        .values("conversation_id", "role", "text", "tier")
    ):
        conv = message["conversation_id"]
        if len(last[conv]) < LAST_MESSAGES:
            last[conv].insert(0, {"role": message["role"], "text": message["text"][:300]})
        if message["role"] == Message.Role.BOT and message["tier"]:
            tiers[conv].add(message["tier"])
    items = [
        {
            "id": row["pk"],
            # The id the shopper's widget knows its conversation by (its hello frame).
            "public_id": str(row["public_id"]),
            "status": row["handoff"],
            "wait_s": round((now - row["handoff_queued_at"]).total_seconds())
            if row["handoff_queued_at"]
            else 0,
            "language": row["language"],
            "customer_id": row["customer_id"],
            "identity": row["identity"],
            "vip": row["vip"],
            "last": last[row["pk"]],
            "tiers": sorted(tiers[row["pk"]]),
        }
        for row in rows
    ]
    return {
        "type": "inbox",
        "queue": [item for item in items if item["status"] == H.QUEUED],
        "mine": [item for item in items if item["status"] == H.CLAIMED],
        "tickets": tickets_open(),
        "agents": agents_list(),
    }


def conversation_detail(*, agent_id: int, conversation_id: int) -> dict[str, Any]:
    """One conversation for the agent: all messages, internal notes, the shopper's
    verified identity and their orders (only theirs, through the OrderService)."""
    conversation = Conversation.objects.filter(_visible(agent_id), pk=conversation_id).first()
    if conversation is None:
        raise DeskDenied("not in the queue and not yours")
    photos = {
        a.message_id: photo_view(a)
        for a in Attachment.objects.filter(conversation=conversation, message__isnull=False)
    }
    messages = [
        {
            "message_id": m.pk,
            "role": m.role,
            "text": m.text,
            "tier": m.tier,
            "intent": m.intent,
            "agent": (m.metadata or {}).get("agent", ""),
            "created": m.created_at.isoformat(),
            "attachment": photos.get(m.pk),
        }
        for m in conversation.messages.exclude(text="", attachment__isnull=True).order_by(
            "created_at", "id"
        )
    ]
    notes = [
        {"text": n.text, "author": agent_display_name(n.author) if n.author else "", "id": n.pk}
        for n in Note.objects.filter(conversation=conversation).select_related("author")
    ]
    return {
        "type": "conversation",
        "canned": canned_replies(language=conversation.language),
        "id": conversation.pk,
        "status": conversation.handoff,
        "mine": conversation.handoff_agent_id == agent_id,
        "language": conversation.language,
        "messages": messages,
        "notes": notes,
        "customer": _customer(conversation),
    }


# -- photos ----------------------------------------------------------------------------------


def photo_view(attachment: Attachment) -> dict[str, Any]:
    """A shopper's photo as the desk shows it: its link is the desk's own (staff only)."""
    return {
        "id": str(attachment.public_id),
        "name": attachment.name,
        "url": reverse("desk:attachment", args=[attachment.public_id]),
        "width": attachment.width,
        "height": attachment.height,
    }


def photo_for_agent(*, agent_id: int, public_id: str) -> Attachment | None:
    """A photo in a conversation the agent may open, or on a ticket; else None."""
    visible = Q(conversation__in=Conversation.objects.filter(_visible(agent_id))) | Q(
        tickets__isnull=False
    )
    try:
        return Attachment.objects.filter(visible, public_id=public_id).distinct().first()
    except ValueError:  # not a UUID
        return None


def photo_relay(*, attachment: Attachment) -> None:
    """A photo sent in the chat while a person holds (or will hold) the conversation
    reaches their desk at once; otherwise it waits in the conversation's history."""
    message = attachment.message
    if message is None:
        return
    status = human_holds(conversation_id=attachment.conversation_id)
    if status not in (H.QUEUED, H.CLAIMED):
        return
    frame = {**message_frame(message), "attachment": photo_view(attachment)}
    group_frame_sync(agents_group(attachment.conversation_id), frame)
    if status == H.QUEUED:
        group_frame_sync(desk_group(), {"type": "queue_changed"})


def _customer(conversation: Conversation) -> dict[str, Any] | None:
    """The verified shopper and their orders; None when not verified."""
    if not conversation.customer_id:
        return None
    service = get_order_service()
    try:
        customer = service.customer_by_id(customer_id=conversation.customer_id)
        orders = service.orders_for_customer(customer_id=conversation.customer_id)
    except OrderServiceError as exc:
        return {"customer_id": conversation.customer_id, "error": exc.code, "orders": []}
    if customer is None:
        return {"customer_id": conversation.customer_id, "orders": []}
    return {
        "customer_id": customer.customer_id,
        "name": f"{customer.first_name} {customer.last_name}".strip(),
        "email": customer.email,
        "vip": customer.vip,
        "verified_by": conversation.identity,
        "orders": [
            {
                "order_id": o.order_id,
                "status": o.status,
                "total": str(o.total),
                "total_shown": money(o.total),
                "placed_on": o.placed_on.isoformat(),
                "items": len(o.items),
            }
            for o in orders[:20]
        ],
    }


# -- claim, transfer, resolve, notes ----------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    ok: bool
    # Why not: "taken" (another agent claimed it first), "not_yours", "unknown_agent".
    reason: str = ""


def _audited(
    change: Callable[[], bool],
    refused: str,
    *,
    agent_id: int,
    conversation_id: int,
    action: str,
    detail: dict[str, Any] | None = None,
) -> Outcome:
    """Run one conditional state change and log it in the same transaction; ``refused``
    is the reason given when the change matched nothing."""
    with transaction.atomic():
        if not change():
            return Outcome(False, refused)
        AuditEvent.objects.create(
            conversation_id=conversation_id, actor_id=agent_id, action=action, detail=detail or {}
        )
    return Outcome(True)


def claim(*, agent_id: int, conversation_id: int) -> Outcome:
    return _audited(
        lambda: handoff_claim(conversation_id=conversation_id, agent_id=agent_id),
        "taken",
        agent_id=agent_id,
        conversation_id=conversation_id,
        action=AuditEvent.Action.CLAIM,
    )


def transfer(*, agent_id: int, conversation_id: int, to_agent_id: int) -> Outcome:
    from django.contrib.auth import get_user_model

    target = get_user_model().objects.filter(pk=to_agent_id, is_active=True).first()
    if target is None or not (target.groups.filter(name=AGENTS_GROUP).exists() or is_agent(target)):
        return Outcome(False, "unknown_agent")
    return _audited(
        lambda: handoff_transfer(
            conversation_id=conversation_id, from_agent_id=agent_id, to_agent_id=to_agent_id
        ),
        "not_yours",
        agent_id=agent_id,
        conversation_id=conversation_id,
        action=AuditEvent.Action.TRANSFER,
        detail={"to": to_agent_id},
    )


def resolve(*, agent_id: int, conversation_id: int) -> Outcome:
    return _audited(
        lambda: handoff_resolve(conversation_id=conversation_id, agent_id=agent_id),
        "not_yours",
        agent_id=agent_id,
        conversation_id=conversation_id,
        action=AuditEvent.Action.RESOLVE,
    )


def note_add(*, agent_id: int, conversation_id: int, text: str) -> Note:
    """An internal note (never sent to the shopper) on a conversation the agent can see."""
    if not Conversation.objects.filter(_visible(agent_id), pk=conversation_id).exists():
        raise DeskDenied("not in the queue and not yours")
    return Note.objects.create(conversation_id=conversation_id, author_id=agent_id, text=text)


def requeue_abandoned() -> list[int]:
    """Conversations of agents gone past the timeout go back to the queue (audited)."""
    ids = handoff_requeue_abandoned()
    AuditEvent.objects.bulk_create(
        [AuditEvent(conversation_id=pk, action=AuditEvent.Action.REQUEUE) for pk in ids]
    )
    return ids


def human_messages(*, conversation_id: int) -> int:
    return Message.objects.filter(conversation_id=conversation_id, tier=HUMAN_TIER).count()


# -- canned replies and the knowledge base --------------------------------------------------


def canned_replies(*, language: str) -> list[dict[str, str]]:
    """The shop's reply templates without placeholders, in the conversation's language:
    texts an agent can insert as they are (and edit before sending)."""
    from routing.models import ReplyTemplate

    rows = ReplyTemplate.objects.filter(language=language or "en").select_related("intent")
    return [
        {"group": _topic(t.intent.name), "label": _shortened(t.text, 70), "text": t.text}
        for t in rows.order_by("intent__name", "key")
        if "{" not in t.text
    ]


def _topic(intent_name: str) -> str:
    """An intent's slug as an agent reads it: "cancel_order" → "Cancel order"."""
    return intent_name.replace("_", " ").replace("-", " ").strip().capitalize()


def _shortened(text: str, limit: int) -> str:
    """The start of a reply, cut at a word, for a menu entry (the full text is inserted)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[:limit].rsplit(" ", 1)[0].rstrip(",;:")
    return f"{cut}…"


def kb_search(*, query: str, language: str) -> dict[str, Any]:
    """Approved answer cards whose heading, answer or phrasings contain the query, and
    the knowledge base's top passages for it: both insertable into a reply."""
    from knowledge.models import AnswerCard
    from knowledge.retrieval import passages_retrieve

    query = query.strip()[:300]
    cards = [
        {"heading": c.heading, "answer": c.answer, "anchor": c.anchor}
        for c in AnswerCard.objects.filter(status=AnswerCard.Status.APPROVED).filter(
            Q(heading__icontains=query) | Q(answer__icontains=query) | Q(questions__icontains=query)
        )[:5]
    ]
    passages: list[dict[str, str]] = []
    try:
        found = passages_retrieve(question=query, language=language or "en")
        passages = [
            {"title": p.title, "anchor": p.anchor, "text": p.text[:600]} for p in found.passages[:3]
        ]
    except Exception:  # the index not built yet: the cards still help
        logger.warning("knowledge search failed for the desk", exc_info=True)
    return {"type": "kb_results", "query": query, "cards": cards, "passages": passages}


# -- tickets ---------------------------------------------------------------------------------


def tickets_open() -> list[dict[str, Any]]:
    return [
        {
            "id": t.pk,
            "email": t.email,
            "question": t.question,
            "language": t.language,
            "created": t.created_at.isoformat(),
            "attachments": [photo_view(a) for a in t.attachments.all()],
        }
        for t in Ticket.objects.filter(status=Ticket.Status.OPEN)
        .order_by("created_at")
        .prefetch_related("attachments")[:100]
    ]


def ticket_create(
    *, session_key: str, email: str, question: str, attachments: list[str] | None = None
) -> Ticket:
    """Store the shopper's question and email it to the shop (Django's email framework).
    The ticket is stored first: a mail server that is down loses nothing. ``attachments``
    are the public ids of photos uploaded from the ticket form: only this conversation's
    count."""
    conversation = Conversation.objects.filter(session_key=session_key[:64]).first()
    ticket = Ticket.objects.create(
        conversation=conversation,
        email=email,
        question=question,
        language=conversation.language if conversation else "",
    )
    photos: list[Attachment] = []
    if conversation is not None and attachments:
        ids = [a for a in attachments[:MAX_TICKET_PHOTOS] if _uuid_like(a)]
        photos = list(Attachment.objects.filter(conversation=conversation, public_id__in=ids))
        ticket.attachments.add(*photos)
    try:
        email_send(
            Email(
                subject=f"[Tierdesk] Ticket {ticket.pk} from {email}",
                body=(
                    f"A shopper left a question while nobody was available.\n\n"
                    f"From: {email}\nConversation: "
                    f"{conversation.public_id if conversation else '-'}"
                    f"\n\n{question}\n\n"
                    + (f"Photos attached: {len(photos)} (see them in the desk)\n" if photos else "")
                    + "Answer it from the desk: /desk/"
                ),
                from_email=settings.DEFAULT_FROM_EMAIL,
                to=[settings.TIERDESK_SHOP_EMAIL],
                kind="ticket",
            )
        )
    except Exception:
        logger.exception("ticket %s stored, but the shop could not be emailed", ticket.pk)
    return ticket


def ticket_answer(*, agent_id: int, ticket_id: int, text: str) -> Outcome:
    """Answer a ticket by email to the shopper. Only an open ticket: two agents
    answering at once send one email."""
    with transaction.atomic():
        updated = Ticket.objects.filter(pk=ticket_id, status=Ticket.Status.OPEN).update(
            status=Ticket.Status.ANSWERED,
            answer=text,
            answered_by_id=agent_id,
            answered_at=timezone.now(),
        )
        if updated != 1:
            return Outcome(False, "answered")
        ticket = Ticket.objects.get(pk=ticket_id)
        AuditEvent.objects.create(
            ticket=ticket, actor_id=agent_id, action=AuditEvent.Action.TICKET_REPLY
        )
        email_send(
            Email(
                subject="Re: your question",
                body=f"{text}\n\n> {ticket.question}",
                from_email=settings.TIERDESK_SHOP_EMAIL,
                to=[ticket.email],
                kind="ticket_answer",
            )
        )
    return Outcome(True)
