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
from django.utils.translation import gettext_lazy as _

from routing.admin_base import ReadOnlyAdmin
from routing.interchange import Plan
from routing.interchange_records import FORMATS, TIERS, ImportFailed
from routing.models import (
    ClassifierModel,
    Intent,
    OutOfScopePoint,
    ReplyTemplate,
    RetrainRun,
    Rule,
    SlotPattern,
    Utterance,
)

# An uploaded file travels from the preview back to "apply" in a hidden field.
IMPORT_MAX_BYTES = 5 * 1024 * 1024


class IntentImportForm(forms.Form):
    file = forms.FileField(
        label=_("File"), required=False, help_text=_("CSV, JSON or Rasa nlu.yml (UTF-8)")
    )
    content = forms.CharField(required=False, widget=forms.HiddenInput)
    filename = forms.CharField(required=False, widget=forms.HiddenInput)
    format = forms.ChoiceField(
        choices=[("", _("from the file name")), *[(f, f) for f in FORMATS]],
        required=False,
        label=_("Format"),
    )
    language = forms.ChoiceField(
        choices=[("auto", _("detect per text")), ("en", _("English")), ("zh", _("Chinese"))],
        label=_("Language"),
        initial="auto",
        help_text=_("for rows that don't say"),
    )
    default_tier = forms.ChoiceField(
        choices=[("", "—"), *[(t, t) for t in TIERS]],
        required=False,
        label=_("Default tier"),
        help_text=_("for new intents the file gives no tier"),
    )
    replace = forms.BooleanField(
        label=_("Replace"),
        required=False,
        help_text=_("the file's intents keep only the file's examples"),
    )
    disable_missing = forms.BooleanField(
        label=_("Disable missing"),
        required=False,
        help_text=_("disable intents that have examples but aren't in the file"),
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
    format = forms.ChoiceField(choices=[(f, f) for f in FORMATS], label=_("Format"))


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
            path(
                "out-of-scope-point/",
                self.admin_site.admin_view(self.oos_point_view),
                name="routing_intent_oos_point",
            ),
        ]
        return mine + super().get_urls()

    def _context(self, request: HttpRequest, title: Any, **extra: Any) -> dict[str, Any]:
        return {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": title,
            **extra,
        }

    def import_view(self, request: HttpRequest) -> HttpResponse:
        """Upload -> preview (what would change, or every error) -> apply."""
        from routing.interchange import bundle_apply, bundle_plan
        from routing.interchange_parse import bundle_parse, format_guess

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
            self._context(request, _("Import intents"), form=form, plan=plan),
        )

    def export_view(self, request: HttpRequest) -> HttpResponse:
        from routing.interchange_export import intents_export

        form = IntentExportForm(request.GET or None)
        if not form.is_valid():
            return render(
                request,
                "admin/routing/intent/export.html",
                self._context(request, _("Export intents"), form=form),
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
                _("Classifier retraining"),
                status=status,
                chart=oos_chart(status["calibration"]),
                runs=RetrainRun.objects.all()[:15],
                running=status["running"],
            ),
        )

    def oos_point_view(self, request: HttpRequest) -> HttpResponse:
        """POST: apply the point of the out-of-scope curve the admin clicked (its
        threshold), for every process within seconds; back to the retraining page."""
        from routing.services import retrain_status

        back = HttpResponseRedirect(reverse("admin:routing_intent_retraining") + "#oos-curve")
        if request.method != "POST" or not self.has_change_permission(request):
            return back
        calibration = retrain_status()["calibration"]
        points = {p["threshold"]: p for p in (calibration or {}).get("curve", [])}
        try:
            threshold = round(float(request.POST.get("threshold", "")), 4)
        except ValueError:
            threshold = -1.0
        point = points.get(threshold)
        if point is None:
            messages.error(request, "Choose one of the points of the current curve.")
            return back
        OutOfScopePoint.objects.create(
            threshold=threshold,
            in_scope_accuracy=point["in_scope_accuracy"],
            oos_recall=point["oos_recall"],
            chosen_by=request.user.get_username(),
        )
        messages.success(
            request,
            f"Out-of-scope threshold set to {threshold:.2f}: on your held-out examples "
            f"{point['in_scope_accuracy']:.0%} answered with the right intent, "
            f"{point['oos_recall']:.0%} of the out-of-scope ones asked to rephrase. "
            "The bot applies it within seconds.",
        )
        return back

    @admin.display(description=_("EN examples"), ordering="_en")
    def en_examples(self, obj: Intent) -> int:
        return getattr(obj, "_en", 0)

    @admin.display(description=_("ZH examples"), ordering="_zh")
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
        (_("Regex rule"), {"fields": ["pattern", "min_matches"]}),
        (_("Keyword-density rule"), {"fields": ["keywords", "min_density"]}),
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


# The out-of-scope chart on the retraining page: x = out-of-scope recall, y = in-scope
# accuracy, one clickable point per threshold of the curve (SVG, no script library).
CHART_W, CHART_H, CHART_PAD = 640, 360, 56


def oos_chart(calibration: dict[str, Any] | None) -> dict[str, Any] | None:
    """The curve's points in SVG coordinates, with the chosen and suggested marked."""
    if not calibration or not calibration.get("curve"):
        return None
    curve = calibration["curve"]
    low = min(p["in_scope_accuracy"] for p in curve)
    y_min = max(0.0, int(low * 10) / 10)  # the accuracy axis starts at a round tenth
    span = max(1.0 - y_min, 0.05)
    plot_w, plot_h = CHART_W - 2 * CHART_PAD, CHART_H - 2 * CHART_PAD

    def xy(recall: float, accuracy: float) -> tuple[float, float]:
        x = CHART_PAD + recall * plot_w
        y = CHART_PAD + (1.0 - (accuracy - y_min) / span) * plot_h
        return round(x, 1), round(y, 1)

    points = []
    for p in curve:
        x, y = xy(p["oos_recall"], p["in_scope_accuracy"])
        points.append(
            {
                **p,
                "x": x,
                "y": y,
                "label_left": round(x - 12, 1),
                "label_right": round(x + 12, 1),
                "label_y": round(y + 4, 1),
                "in_use": p["threshold"] == calibration.get("configured_point"),
                "suggested": p["threshold"] == calibration.get("suggested_threshold"),
            }
        )
    ticks_y = []
    step = 0.05 if span <= 0.3 else 0.1
    value = 1.0
    while value >= y_min - 1e-9:
        ticks_y.append({"label": f"{value:.2f}", "y": xy(0.0, value)[1]})
        value = round(value - step, 4)
    return {
        "width": CHART_W,
        "height": CHART_H,
        "left": CHART_PAD,
        "right": CHART_W - CHART_PAD,
        "top": CHART_PAD,
        "bottom": CHART_H - CHART_PAD,
        "points": points,
        "polyline": " ".join(f"{p['x']},{p['y']}" for p in points),
        "ticks_x": [
            {"label": f"{v:.0%}", "x": xy(v, y_min)[0]} for v in (0.0, 0.25, 0.5, 0.75, 1.0)
        ],
        "ticks_y": ticks_y,
    }
