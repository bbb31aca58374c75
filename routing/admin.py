"""Support admins edit the router here: intents with their example utterances and
reply templates (EN/ZH), slot patterns and rules. Every save bumps RouterVersion, so
running processes pick the change up within seconds, without a restart."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest

from routing.admin_base import ReadOnlyAdmin
from routing.models import (
    ClassifierModel,
    Intent,
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
