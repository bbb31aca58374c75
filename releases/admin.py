"""Django admin for the gray release: drafts are edited here; operating a release
(start, weight, pause, promote, roll back) happens in the operator console."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from releases.models import GuardrailDecision, Release, ReleaseEvent
from routing.admin_base import AuditAdmin

# --- gray release (releases): drafts are edited here; operating a release
# (start, weight, pause, promote, roll back) happens in the operator console, which
# asks for confirmation and a reason. Every save goes through the audited services.


class ReleaseForm(forms.ModelForm):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=_("Why: kept in the release's audit trail."),
    )

    class Meta:
        model = Release
        fields = ["name", "description", "config"]

    def clean_config(self) -> Any:
        from releases.config import config_parse

        return config_parse(self.cleaned_data.get("config")).as_json()


class ReleaseEventInline(admin.TabularInline):
    model = ReleaseEvent
    fields = ("at", "actor", "action", "reason", "before", "after")
    readonly_fields = ("at", "actor", "action", "reason", "before", "after")
    extra = 0
    can_delete = False
    ordering = ["-at", "-id"]

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Release)
class ReleaseAdmin(admin.ModelAdmin):
    form = ReleaseForm
    list_display = ["name", "status", "is_stable", "weight", "paused", "started_at", "finished_at"]
    list_filter = ["status", "is_stable"]
    inlines = [ReleaseEventInline]
    state_fields = [
        "status",
        "is_stable",
        "weight",
        "max_weight",
        "paused",
        "started_at",
        "last_step_at",
        "at_max_since",
        "finished_at",
        "breach_streak",
        "created_by",
    ]

    def get_readonly_fields(self, request: HttpRequest, obj: Release | None = None) -> list[str]:
        if obj is None:
            return []
        if obj.status != Release.Status.DRAFT:
            return ["name", "description_shown", "config", *self.state_fields]
        return ["name", *self.state_fields]

    def get_fields(self, request: HttpRequest, obj: Release | None = None) -> Any:
        if obj is None:
            return ["name", "description", "config", "reason"]
        if obj.status != Release.Status.DRAFT:
            return ["name", "description_shown", "config", *self.state_fields]
        return ["name", "description", "config", "reason", *self.state_fields]

    @admin.display(description=_("description"))
    def description_shown(self, obj: Release) -> str:
        # A release the system wrote (the baseline) stores its description as a msgid.
        return gettext(obj.description) if obj.description else ""

    def has_delete_permission(self, request: HttpRequest, obj: Release | None = None) -> bool:
        # Only an unused draft: a release that ran keeps its audit trail and metrics.
        return bool(
            obj is not None
            and obj.status == Release.Status.DRAFT
            and super().has_delete_permission(request, obj)
        )

    def save_model(self, request: HttpRequest, obj: Release, form: Any, change: bool) -> None:
        from releases.services import release_create, release_edit

        reason = form.cleaned_data["reason"]
        if change:
            release_edit(
                release_id=obj.pk,
                config=obj.config,
                description=obj.description,
                user=request.user,
                reason=reason,
            )
        else:
            created = release_create(
                name=obj.name,
                config=obj.config,
                description=obj.description,
                user=request.user,
                reason=reason,
            )
            obj.pk = created.pk
            obj._state.adding = False


@admin.register(ReleaseEvent)
class ReleaseEventAdmin(AuditAdmin):
    """The audit trail: read-only."""

    list_display = ["at", "release", "actor", "action", "reason"]
    list_filter = ["action", "actor"]
    search_fields = ["reason", "release__name", "actor"]


@admin.register(GuardrailDecision)
class GuardrailDecisionAdmin(AuditAdmin):
    """Every guardrail evaluation with its numbers: read-only."""

    list_display = ["at", "release", "outcome", "summary"]
    list_filter = ["outcome"]
