from __future__ import annotations

import json
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Substr
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.urls import URLPattern, path, reverse
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from routing.admin_base import ReadOnlyAdmin

from .attachments import photo_response
from .budgets import session_budget
from .models import Attachment, BotCheck, Conversation, Feedback, Message
from .privacy import shopper_erase, shopper_export

# How long a list's message preview is (characters).
PREVIEW_CHARS = 80
THUMBS = {1: "\U0001f44d", 0: "\U0001f44e"}  # Feedback.value of a thumb: 1 up, 0 down


def preview(text: str) -> str:
    """A message on one line, cut at PREVIEW_CHARS (the lists' preview)."""
    text = " ".join(text.split())
    return text[: PREVIEW_CHARS - 1] + "\u2026" if len(text) >= PREVIEW_CHARS else text


def thumb_text(value: int) -> str:
    word = _("up") if value == 1 else _("down")
    return f"{THUMBS.get(value, '?')} {word}"


def _route_why(message: Message) -> str:
    # Which rule fired, or the classifier's top classes (routing/explain.py).
    from routing.explain import route_reason_text

    return route_reason_text(
        tier=message.tier,
        intent=message.intent,
        confidence=message.confidence,
        reason=message.route_reason,
    )


def _judge_note(metadata: dict[str, Any]) -> str:
    """What the answerability judge decided for an L2 reply (knowledge.judge): the word
    check refused the passages, and the model's verdict answered or kept the refusal."""
    judge = (metadata.get("retrieval") or {}).get("judge")
    if not isinstance(judge, dict):
        return ""
    if judge.get("skipped"):
        return str(_("not asked (an article's lead); the don't-know reply was kept"))
    if judge.get("answers"):
        return str(_("yes (%(role)s): answered from a passage the word check refused")) % {
            "role": judge.get("role", "")
        }
    return str(_("no (%(role)s): the don't-know reply was kept")) % {"role": judge.get("role", "")}


def transcript_html(conversation: Conversation) -> SafeString:
    """The conversation as a chat: one bubble per message, its metadata folded."""
    thumbs = dict(
        Feedback.objects.filter(conversation=conversation, kind=Feedback.Kind.THUMB).values_list(
            "message_id", "value"
        )
    )
    # A shopper's photo: a thumbnail linking to the full photo, served by the admin
    # itself (ConversationAdmin.photo: staff who may view this conversation, no one else).
    photos = {
        a.message_id: {
            "url": reverse("admin:chatbot_conversation_photo", args=[conversation.pk, a.public_id]),
            "name": a.name,
        }
        for a in Attachment.objects.filter(conversation=conversation, message__isnull=False)
    }
    turns: list[dict[str, Any]] = []
    for m in conversation.messages.select_related("release").order_by("created_at", "id"):
        details: list[tuple[str, Any]] = []
        if m.role != Message.Role.USER or m.tier:
            details += [
                (_("why this tier"), _route_why(m) if m.tier else "-"),
                (_("model"), m.model or "-"),
            ]
        if m.role == Message.Role.BOT:
            details += [
                (_("first chunk"), f"{m.first_chunk_ms:.0f} ms" if m.first_chunk_ms else "-"),
                (_("total"), f"{m.total_ms:.0f} ms" if m.total_ms else "-"),
                (_("tokens"), f"{m.prompt_tokens} + {m.completion_tokens}"),
                (_("release"), f"{m.variant} ({m.release})" if m.variant else "-"),
            ]
            if judge := _judge_note(m.metadata or {}):
                details.append((_("answerability judge"), judge))
        details.append((_("language"), m.language or "-"))
        note = ""
        if m.status in (Message.Status.INCOMPLETE, Message.Status.ERROR, Message.Status.STREAMING):
            note = m.get_status_display()
        turns.append(
            {
                "id": m.pk,
                "role": m.role,
                "who": m.get_role_display(),
                "text": m.text,
                "photo": photos.get(m.pk),
                "created_at": m.created_at,
                "tier": m.tier if m.role == Message.Role.BOT else "",
                "intent": m.intent,
                "status_note": note,
                "rating": thumb_text(thumbs[m.pk]) if m.pk in thumbs else "",
                "details": details,
                "metadata": json.dumps(m.metadata, indent=2, ensure_ascii=False)
                if m.metadata
                else "",
            }
        )
    return SafeString(render_to_string("admin/chatbot/transcript.html", {"turns": turns}))


class ShopperWroteFilter(admin.SimpleListFilter):
    """Opening the widget starts a conversation before the shopper types anything; by
    default the list shows only the ones where the shopper wrote."""

    title = gettext_lazy("shopper wrote")
    parameter_name = "written"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [("all", gettext_lazy("All, opened without a message too"))]

    def choices(self, changelist: Any) -> Any:
        yield {
            "selected": self.value() is None,
            "query_string": changelist.get_query_string(remove=[self.parameter_name]),
            "display": _("Yes"),
        }
        yield {
            "selected": self.value() == "all",
            "query_string": changelist.get_query_string({self.parameter_name: "all"}),
            "display": _("All, opened without a message too"),
        }

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() == "all":
            return queryset
        wrote = Message.objects.filter(conversation=OuterRef("pk"), role=Message.Role.USER)
        return queryset.filter(Exists(wrote))


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = (
        "public_id",
        "last_message",
        "messages_count",
        "rating",
        "handoff_flag",
        "customer_id",
        "language",
        "updated_at",
    )
    list_filter = (ShopperWroteFilter, "handoff", "identity", "vip", "language")
    search_fields = ("public_id", "customer_id", "messages__text")
    # The transcript first; what only an engineer needs is folded below it. The session
    # key lets whoever holds it read the conversation: it is never shown, listed or
    # searchable here (tests/chatbot/test_privacy.py).
    shopper_fields = ("public_id", "customer_id", "identity", "vip", "language", "handoff")
    technical_fields = (
        "handoff_agent",
        "state",
        "client_ip",
        "user_agent",
        "created_at",
        "updated_at",
        "token_budget",
    )
    fieldsets = (
        (None, {"fields": ("transcript",)}),
        (gettext_lazy("Shopper"), {"fields": shopper_fields}),
        (
            gettext_lazy("Technical details"),
            {"classes": ("collapse",), "fields": technical_fields},
        ),
    )
    # Everything shown is read-only: conversations are written by the chat only.
    readonly_fields = ("transcript", *shopper_fields, *technical_fields)

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        # The list's columns in one query: the last shopper message, the 1-5 score and
        # the thumbs (no query per row).
        last_user = Message.objects.filter(
            conversation=OuterRef("pk"), role=Message.Role.USER
        ).order_by("-created_at", "-id")
        score = Feedback.objects.filter(conversation=OuterRef("pk"), kind=Feedback.Kind.SCORE)
        return (
            super()
            .get_queryset(request)
            .annotate(
                _preview=Subquery(last_user.values(text_head=Substr("text", 1, PREVIEW_CHARS))[:1]),
                _score=Subquery(score.values("value")[:1]),
                _messages=Count("messages", distinct=True),
                _up=Count(
                    "feedback", filter=Q(feedback__kind="thumb", feedback__value=1), distinct=True
                ),
                _down=Count(
                    "feedback", filter=Q(feedback__kind="thumb", feedback__value=0), distinct=True
                ),
            )
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # conversations come from the widget

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Nothing here is edited by hand: the page is a transcript, without Save buttons.
        return False

    def get_urls(self) -> list[URLPattern]:
        photo = path(
            "<path:object_id>/photos/<uuid:public_id>/",
            self.admin_site.admin_view(self.photo),
            name="chatbot_conversation_photo",
        )
        return [photo, *super().get_urls()]

    def photo(self, request: HttpRequest, object_id: str, public_id: Any) -> FileResponse:
        """A shopper's photo in the transcript, as the desk serves one: to signed-in staff
        (admin_view sends everyone else to the login page) who may view conversations
        (403 otherwise), and only a photo of this conversation (404 otherwise)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        conversation = self.get_object(request, object_id)
        if conversation is None or not self.has_view_permission(request, conversation):
            raise Http404("no such conversation")
        attachment = Attachment.objects.filter(
            conversation=conversation, public_id=public_id
        ).first()
        if attachment is None:
            raise Http404("no such photo in this conversation")
        return photo_response(attachment)

    @admin.display(description=gettext_lazy("conversation"))
    def transcript(self, obj: Conversation) -> SafeString:
        return transcript_html(obj)

    @admin.display(description=gettext_lazy("last shopper message"))
    def last_message(self, obj: Conversation) -> str:
        return preview(getattr(obj, "_preview", None) or "") or "-"

    @admin.display(description=gettext_lazy("messages"), ordering="_messages")
    def messages_count(self, obj: Conversation) -> int:
        return int(getattr(obj, "_messages", 0))

    @admin.display(description=gettext_lazy("rating"), ordering="_score")
    def rating(self, obj: Conversation) -> str:
        parts = []
        score = getattr(obj, "_score", None)
        if score:
            parts.append(f"{score}/5")
        up, down = getattr(obj, "_up", 0), getattr(obj, "_down", 0)
        if up:
            parts.append(f"{THUMBS[1]} {up}")
        if down:
            parts.append(f"{THUMBS[0]} {down}")
        return " ".join(parts) or "-"

    @admin.display(description=gettext_lazy("handoff"), boolean=True, ordering="handoff")
    def handoff_flag(self, obj: Conversation) -> bool:
        # A person was asked for (queued, claimed or resolved by one).
        return obj.handoff != Conversation.Handoff.NONE

    actions = ["shopper_data_export", "shopper_data_erase"]

    @admin.action(description=gettext_lazy("Export these shoppers' data (JSON)"))
    def shopper_data_export(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse:
        documents = [
            shopper_export(customer_id=customer_id)
            for customer_id in sorted({c.customer_id for c in queryset if c.customer_id})
        ]
        response = HttpResponse(
            json.dumps(documents, indent=2, ensure_ascii=False),
            content_type="application/json",
        )
        response["Content-Disposition"] = 'attachment; filename="shopper-data.json"'
        return response

    @admin.action(
        description=gettext_lazy("Erase these shoppers' data (every conversation of theirs)"),
        permissions=["delete"],
    )
    def shopper_data_erase(self, request: HttpRequest, queryset: QuerySet) -> None:
        customers = sorted({c.customer_id for c in queryset if c.customer_id})
        for customer_id in customers:
            shopper_erase(customer_id=customer_id)
        # Anonymous conversations have no shopper to follow: they go themselves.
        anonymous, _per_model = queryset.filter(customer_id="").delete()
        self.message_user(
            request,
            _("Erased the data of %(shoppers)d shopper(s) and %(rows)d anonymous row(s).")
            % {"shoppers": len(customers), "rows": anonymous},
            messages.SUCCESS,
        )

    @admin.display(description=gettext_lazy("token budget (docs/resilience.md)"))
    def token_budget(self, obj: Conversation) -> str:
        """The per-session token circuit breaker, as the next turn will see it."""
        if obj.pk is None:
            return "-"
        b = session_budget(conversation_id=obj.pk)
        if b.window_s % 60 == 0:
            window = _("%(n)d min") % {"n": b.window_s // 60}
        else:
            window = _("%(n)d s") % {"n": b.window_s}
        facts = {"tokens": f"{b.tokens:,}", "budget": f"{b.budget:,}", "window": window}
        if not b.tripped:
            closed = _(
                "%(tokens)s of %(budget)s tokens in the last %(window)s: closed (all tiers "
                "available)"
            )
            return closed % facts
        tripped = _(
            "%(tokens)s of %(budget)s tokens in the last %(window)s: TRIPPED (the local small "
            "model answers until %(time)s)"
        )
        clears = b.clears_at.strftime("%Y-%m-%d %H:%M:%S UTC") if b.clears_at else "-"
        return tripped % {**facts, "time": clears}


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "conversation",
        "role",
        "short_text",
        "rating",
        "handoff_flag",
        "status",
        "tier",
        "intent",
        "confidence",
        "first_chunk_ms",
        "created_at",
    )
    list_filter = ("role", "status", "tier", "intent")
    search_fields = ("text",)
    readonly_fields = [f.name for f in Message._meta.fields]

    list_select_related = ("conversation",)

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        thumb = Feedback.objects.filter(message=OuterRef("pk"), kind=Feedback.Kind.THUMB)
        return super().get_queryset(request).annotate(_thumb=Subquery(thumb.values("value")[:1]))

    @admin.display(description=gettext_lazy("text"))
    def short_text(self, obj: Message) -> str:
        return preview(obj.text)

    @admin.display(description=gettext_lazy("rating"), ordering="_thumb")
    def rating(self, obj: Message) -> str:
        thumb = getattr(obj, "_thumb", None)
        return "-" if thumb is None else thumb_text(thumb)

    @admin.display(description=gettext_lazy("handoff"), boolean=True)
    def handoff_flag(self, obj: Message) -> bool:
        # The conversation went (or is going) to a person.
        return obj.conversation.handoff != Conversation.Handoff.NONE


@admin.register(Feedback)
class FeedbackAdmin(ReadOnlyAdmin):
    """Shoppers' ratings (CSAT), with the tier, intent and release variant they rate."""

    list_display = (
        "updated_at",
        "kind",
        "rating",
        "satisfied",
        "rated_message",
        "tier",
        "intent",
        "variant",
        "changes",
    )
    list_filter = ("kind", "satisfied", "tier", "variant")
    readonly_fields = [f.name for f in Feedback._meta.fields]
    list_select_related = ("message",)

    @admin.display(description=gettext_lazy("rating"), ordering="value")
    def rating(self, obj: Feedback) -> str:
        # Thumbs are stored 1/0; a score is 1-5.
        return thumb_text(obj.value) if obj.kind == Feedback.Kind.THUMB else f"{obj.value}/5"

    @admin.display(description=gettext_lazy("rated reply"))
    def rated_message(self, obj: Feedback) -> str:
        if obj.message is None:
            return _("the whole conversation")
        return preview(obj.message.text)


@admin.register(BotCheck)
class BotCheckAdmin(ReadOnlyAdmin):
    """Bot-check verdicts, read-only: what was decided and from which features."""

    list_display = ("created_at", "action", "reason", "score", "conversation", "client_id")
    list_filter = ("action", "reason")
    readonly_fields = (
        "created_at",
        "conversation",
        "message",
        "client_id",
        "action",
        "reason",
        "score",
        "signals",
        "features",
    )
