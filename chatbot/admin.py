from __future__ import annotations

from django.contrib import admin

from .models import Conversation, Message


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
        "route_reason",
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
    readonly_fields = (
        "public_id",
        "session_key",
        "customer_id",
        "identity",
        "vip",
        "language",
        "state",
        "client_ip",
        "user_agent",
        "created_at",
        "updated_at",
    )
    exclude = ()
    inlines = [MessageInline]


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
