"""Support admins edit the router here: intents with their example utterances and
reply templates (EN/ZH), slot patterns and rules. Every save bumps RouterVersion, so
running processes pick the change up within seconds, without a restart."""

from __future__ import annotations

import base64
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import path, reverse

from routing.admin_base import ReadOnlyAdmin
from routing.interchange import FORMATS, TIERS, ImportFailed, Plan
from routing.models import (
    ClassifierModel,
    Intent,
    ReplyTemplate,
    RetrainRun,
    Rule,
    SlotPattern,
    Utterance,
)

# An uploaded file travels from the preview back to "apply" in a hidden field.
IMPORT_MAX_BYTES = 5 * 1024 * 1024


class IntentImportForm(forms.Form):
    file = forms.FileField(required=False, help_text="CSV, JSON or Rasa nlu.yml (UTF-8)")
    content = forms.CharField(required=False, widget=forms.HiddenInput)
    filename = forms.CharField(required=False, widget=forms.HiddenInput)
    format = forms.ChoiceField(
        choices=[("", "from the file name"), *[(f, f) for f in FORMATS]], required=False
    )
    language = forms.ChoiceField(
        choices=[("auto", "detect per text"), ("en", "English"), ("zh", "Chinese")],
        initial="auto",
        help_text="for rows that don't say",
    )
    default_tier = forms.ChoiceField(
        choices=[("", "—"), *[(t, t) for t in TIERS]],
        required=False,
        help_text="for new intents the file gives no tier",
    )
    replace = forms.BooleanField(
        required=False, help_text="the file's intents keep only the file's examples"
    )
    disable_missing = forms.BooleanField(
        required=False, help_text="disable intents that have examples but aren't in the file"
    )

    def raw(self) -> tuple[bytes, str]:
        """The file's bytes and name: the upload, or the previewed content."""
        upload = self.cleaned_data.get("file")
        if upload is not None:
            if upload.size > IMPORT_MAX_BYTES:
                raise forms.ValidationError(f"file larger than {IMPORT_MAX_BYTES} bytes")
            return upload.read(), upload.name
        if self.cleaned_data.get("content"):
            return base64.b64decode(self.cleaned_data["content"]), self.cleaned_data["filename"]
        raise forms.ValidationError("choose a file")


class IntentExportForm(forms.Form):
    format = forms.ChoiceField(choices=[(f, f) for f in FORMATS])


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

    def get_urls(self) -> list[Any]:
        mine = [
            path(
                "import/",
                self.admin_site.admin_view(self.import_view),
                name="routing_intent_import",
            ),
            path(
                "export/",
                self.admin_site.admin_view(self.export_view),
                name="routing_intent_export",
            ),
            path(
                "retraining/",
                self.admin_site.admin_view(self.retraining_view),
                name="routing_intent_retraining",
            ),
        ]
        return mine + super().get_urls()

    def _context(self, request: HttpRequest, title: str, **extra: Any) -> dict[str, Any]:
        return {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": title,
            **extra,
        }

    def import_view(self, request: HttpRequest) -> HttpResponse:
        """Upload -> preview (what would change, or every error) -> apply."""
        from routing.interchange import bundle_apply, bundle_parse, bundle_plan, format_guess

        if not self.has_add_permission(request) or not self.has_change_permission(request):
            return HttpResponse(status=403)
        form = IntentImportForm(request.POST or None, request.FILES or None)
        plan: Plan | None = None
        if request.method == "POST" and form.is_valid():
            try:
                raw, filename = form.raw()
            except forms.ValidationError as exc:
                form.add_error("file", exc)
            else:
                options = {
                    "default_tier": form.cleaned_data["default_tier"],
                    "replace": form.cleaned_data["replace"],
                    "disable_missing": form.cleaned_data["disable_missing"],
                }
                bundle = bundle_parse(
                    raw,
                    fmt=form.cleaned_data["format"] or format_guess(filename),
                    default_language=form.cleaned_data["language"],
                )
                if "apply" in request.POST:
                    try:
                        applied = bundle_apply(bundle, **options)
                    except ImportFailed as exc:
                        plan = bundle_plan(bundle, **options)
                        plan.errors = exc.errors
                    else:
                        totals = ", ".join(
                            f"{k.replace('_', ' ')} {v}" for k, v in applied.totals.items() if v
                        )
                        messages.success(
                            request, f"Imported {filename}: {totals or 'nothing changed'}."
                        )
                        return HttpResponseRedirect(reverse("admin:routing_intent_retraining"))
                else:
                    plan = bundle_plan(bundle, **options)
                form = IntentImportForm(
                    initial={
                        **form.cleaned_data,
                        "file": None,
                        "content": base64.b64encode(raw).decode(),
                        "filename": filename,
                    }
                )
        return render(
            request,
            "admin/routing/intent/import.html",
            self._context(request, "Import intents", form=form, plan=plan),
        )

    def export_view(self, request: HttpRequest) -> HttpResponse:
        from routing.interchange import intents_export

        form = IntentExportForm(request.GET or None)
        if not form.is_valid():
            return render(
                request,
                "admin/routing/intent/export.html",
                self._context(request, "Export intents", form=form),
            )
        fmt = form.cleaned_data["format"]
        names = request.GET.getlist("name") or None
        extension = {"csv": "csv", "json": "json", "rasa": "yml"}[fmt]
        content_type = {"csv": "text/csv", "json": "application/json", "rasa": "application/yaml"}
        response = HttpResponse(
            intents_export(fmt=fmt, names=names), content_type=f"{content_type[fmt]}; charset=utf-8"
        )
        response["Content-Disposition"] = f'attachment; filename="intents.{extension}"'
        return response

    def retraining_view(self, request: HttpRequest) -> HttpResponse:
        """Whether the classifier serving the current data is trained, and the recent
        retrain runs with their progress; refreshes itself while one is running."""
        from routing.services import retrain_status, router_retrain_now

        if request.method == "POST" and self.has_change_permission(request):
            outcome = router_retrain_now()
            messages.info(request, f"Retrain: {outcome}")
            return HttpResponseRedirect(request.path)
        status = retrain_status()
        return render(
            request,
            "admin/routing/intent/retraining.html",
            self._context(
                request,
                "Classifier retraining",
                status=status,
                runs=RetrainRun.objects.all()[:15],
                running=status["running"],
            ),
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
