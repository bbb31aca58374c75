"""The desk's records in the admin: the audit log (never edited or deleted), tickets
and internal notes (read-only: agents answer tickets from the desk)."""

from __future__ import annotations

from django.contrib import admin

from routing.admin_base import AuditAdmin, ReadOnlyAdmin

from .models import AuditEvent, Note, Ticket


@admin.register(AuditEvent)
class AuditEventAdmin(AuditAdmin):
    list_display = ("created_at", "actor", "action", "conversation", "ticket", "detail")
    list_filter = ("action",)
    search_fields = ("actor__username",)


@admin.register(Ticket)
class TicketAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "email", "status", "answered_by", "answered_at")
    list_filter = ("status",)
    search_fields = ("email", "question")


@admin.register(Note)
class NoteAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "author", "conversation", "text")
