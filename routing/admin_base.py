"""Admin base classes shared by the apps (here, in the lowest app whose admin uses them,
so that routing, releases and chatbot all import down)."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows the system writes (ratings, verdicts, trained models): shown to staff, never
    added or edited by hand. Deleting stays possible (e.g. to purge old rows)."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class AuditAdmin(ReadOnlyAdmin):
    """An audit trail: not even deleted from the admin."""

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
