"""Support admins edit the router here: intents with their example utterances and
reply templates (EN/ZH), slot patterns and rules. Every save bumps RouterVersion, so
running processes pick the change up within seconds, without a restart."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest

from chatbot.admin_base import AuditAdmin, ReadOnlyAdmin
from routing.models import (
    ClassifierModel,
    GuardrailDecision,
    Intent,
    Release,
    ReleaseEvent,
    ReplyTemplate,
    Rule,
    SlotPattern,
    Utterance,
)


class UtteranceInline(admin.TabularInline):
    model = Utterance
    fields = ["language", "text"]
    extra = 3


class ReplyTemplateInline(admin.StackedInline):
    model = ReplyTemplate
    fields = [("key", "language"), "text"]
    extra = 0


@admin.register(Intent)
class IntentAdmin(admin.ModelAdmin):
    list_display = ["name", "tier", "enabled", "en_examples", "zh_examples", "updated_at"]
    list_filter = ["tier", "enabled"]
    search_fields = ["name", "description", "utterances__text"]
    fields = ["name", "tier", "description", "enabled"]
    inlines = [UtteranceInline, ReplyTemplateInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Intent]:
        # Counting in SQL keeps the changelist at one query, not two per intent.
        return (
            super()
            .get_queryset(request)
            .annotate(
                _en=Count("utterances", filter=Q(utterances__language="en"), distinct=True),
                _zh=Count("utterances", filter=Q(utterances__language="zh"), distinct=True),
            )
        )

    @admin.display(description="EN examples", ordering="_en")
    def en_examples(self, obj: Intent) -> int:
        return getattr(obj, "_en", 0)

    @admin.display(description="ZH examples", ordering="_zh")
    def zh_examples(self, obj: Intent) -> int:
        return getattr(obj, "_zh", 0)


@admin.register(SlotPattern)
class SlotPatternAdmin(admin.ModelAdmin):
    list_display = ["name", "regex", "intent", "enabled"]
    list_filter = ["enabled", "name"]
    list_editable = ["enabled"]


@admin.register(Rule)
class RuleAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "intent", "tier", "priority", "languages", "enabled"]
    list_filter = ["kind", "enabled", "tier", "intent"]
    list_editable = ["priority", "enabled"]
    search_fields = ["name", "pattern"]
    fieldsets = [
        (None, {"fields": ["name", "kind", "intent", "tier", "priority", "languages", "enabled"]}),
        ("Regex rule", {"fields": ["pattern", "min_matches"]}),
        ("Keyword-density rule", {"fields": ["keywords", "min_density"]}),
    ]


@admin.register(ClassifierModel)
class ClassifierModelAdmin(ReadOnlyAdmin):
    """The trained classifiers (written by the routing.router_retrain task): which
    router version, how many examples, how long training took. Read-only."""

    list_display = [
        "router_version",
        "sample_count",
        "intent_count",
        "train_seconds",
        "size_bytes",
        "trained_by",
        "trained_at",
    ]
    exclude = ["blob"]
    readonly_fields = [
        "data_hash",
        "router_version",
        "sample_count",
        "intent_count",
        "train_seconds",
        "trained_at",
        "trained_by",
        "sklearn_version",
        "size_bytes",
    ]


# --- gray release (routing/releases): drafts are edited here; operating a release
# (start, weight, pause, promote, roll back) happens in the operator console, which
# asks for confirmation and a reason. Every save goes through the audited services.


class ReleaseForm(forms.ModelForm):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Why: kept in the release's audit trail.",
    )

    class Meta:
        model = Release
        fields = ["name", "description", "config"]

    def clean_config(self) -> Any:
        from routing.releases.config import config_parse

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
            return ["name", "description", "config", *self.state_fields]
        return ["name", *self.state_fields]

    def get_fields(self, request: HttpRequest, obj: Release | None = None) -> Any:
        if obj is None:
            return ["name", "description", "config", "reason"]
        if obj.status != Release.Status.DRAFT:
            return ["name", "description", "config", *self.state_fields]
        return ["name", "description", "config", "reason", *self.state_fields]

    def has_delete_permission(self, request: HttpRequest, obj: Release | None = None) -> bool:
        # Only an unused draft: a release that ran keeps its audit trail and metrics.
        return bool(
            obj is not None
            and obj.status == Release.Status.DRAFT
            and super().has_delete_permission(request, obj)
        )

    def save_model(self, request: HttpRequest, obj: Release, form: Any, change: bool) -> None:
        from routing.releases.services import release_create, release_edit

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
