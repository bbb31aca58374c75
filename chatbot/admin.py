from __future__ import annotations

import json

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse

from routing.admin_base import ReadOnlyAdmin

from .budgets import session_budget
from .models import BotCheck, Conversation, Feedback, Message
from .privacy import shopper_erase, shopper_export


class MessageInline(admin.TabularInline):
    model = Message
    extra = 0
    can_delete = False
    fields = (
        "created_at",
        "role",
        "text",
        "status",
        "tier",
        "intent",
        "confidence",
        "route_why",
        "model",
        "first_chunk_ms",
        "prompt_tokens",
        "completion_tokens",
        "metadata",
    )
    readonly_fields = fields
    ordering = ("created_at", "id")

    def has_add_permission(self, request, obj=None):
        return False

    @admin.display(description="why this tier")
    def route_why(self, obj: Message) -> str:
        # Which rule fired, or the classifier's top classes (routing/explain.py).
        from routing.explain import route_reason_text

        return route_reason_text(
            tier=obj.tier, intent=obj.intent, confidence=obj.confidence, reason=obj.route_reason
        )


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = (
        "public_id",
        "customer_id",
        "identity",
        "vip",
        "language",
        "created_at",
        "updated_at",
    )
    list_filter = ("identity", "vip", "language")
    search_fields = ("public_id", "customer_id", "messages__text")
    # The session key lets whoever holds it read the conversation: it is never shown,
    # listed or searchable here (tests/chatbot/test_privacy.py).
    readonly_fields = (
        "public_id",
        "customer_id",
        "identity",
        "vip",
        "language",
        "state",
        "client_ip",
        "user_agent",
        "created_at",
        "updated_at",
        "token_budget",
    )
    exclude = ("session_key",)
    inlines = [MessageInline]
    actions = ["shopper_data_export", "shopper_data_erase"]

    @admin.action(description="Export these shoppers' data (JSON)")
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
        description="Erase these shoppers' data (every conversation of theirs)",
        permissions=["delete"],
    )
    def shopper_data_erase(self, request: HttpRequest, queryset: QuerySet) -> None:
        customers = sorted({c.customer_id for c in queryset if c.customer_id})
        for customer_id in customers:
            shopper_erase(customer_id=customer_id)
        # Anonymous conversations have no shopper to follow: they go themselves.
        anonymous, _ = queryset.filter(customer_id="").delete()
        self.message_user(
            request,
            f"Erased the data of {len(customers)} shopper(s) and {anonymous} anonymous row(s).",
            messages.SUCCESS,
        )

    @admin.display(description="token budget (docs/resilience.md)")
    def token_budget(self, obj: Conversation) -> str:
        """The per-session token circuit breaker, as the next turn will see it."""
        if obj.pk is None:
            return "-"
        b = session_budget(conversation_id=obj.pk)
        window = f"{b.window_s // 60} min" if b.window_s % 60 == 0 else f"{b.window_s} s"
        text = f"{b.tokens:,} of {b.budget:,} tokens in the last {window}: "
        if not b.tripped:
            return text + "closed (all tiers available)"
        clears = b.clears_at.strftime("%Y-%m-%d %H:%M:%S UTC") if b.clears_at else "-"
        return text + f"TRIPPED (the local small model answers until {clears})"


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "conversation",
        "role",
        "short_text",
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

    @admin.display(description="text")
    def short_text(self, obj: Message) -> str:
        return obj.text[:80]


@admin.register(Feedback)
class FeedbackAdmin(ReadOnlyAdmin):
    """Shoppers' ratings (CSAT), with the tier, intent and release variant they rate."""

    list_display = (
        "updated_at",
        "kind",
        "value",
        "satisfied",
        "tier",
        "intent",
        "variant",
        "changes",
    )
    list_filter = ("kind", "satisfied", "tier", "variant")
    readonly_fields = [f.name for f in Feedback._meta.fields]


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
