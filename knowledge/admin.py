"""Django admin for support admins: documents, ingestion status, chunk and summary
preview, re-ingest, and a "try a question" page that shows what retrieval returns and
why. Views stay thin: writes go through ``knowledge.services``, searches through
``knowledge.retrieval``."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import escape, format_html
from django.utils.safestring import mark_safe
from django.utils.translation import gettext_lazy as _

# admin_synonyms and admin_cards register the synonym sets' and the cards' admin.
from . import admin_cards, admin_synonyms, conflicts, services  # noqa: F401
from .models import (
    AnswerCard,
    Chunk,
    DeletedSeedDocument,
    Document,
    KnowledgeConflict,
)


class DocumentForm(forms.ModelForm):
    class Meta:
        model = Document
        fields = ["title", "language", "file", "text", "source_format", "origin"]

    def clean_file(self) -> Any:
        upload = self.cleaned_data.get("file")
        limit = settings.TIERDESK_KB_MAX_UPLOAD_MB * 1024 * 1024
        if upload and getattr(upload, "size", 0) > limit:
            raise forms.ValidationError(
                f"The file is larger than {settings.TIERDESK_KB_MAX_UPLOAD_MB} MB."
            )
        name = str(getattr(upload, "name", "") or "")
        is_text = Document.format_for_name(name) == Document.Format.TEXT
        if upload and is_text and not name.lower().endswith(".txt"):
            raise forms.ValidationError("Upload a PDF, HTML, Markdown or .txt file.")
        return upload

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not data.get("file") and not (data.get("text") or "").strip():
            raise forms.ValidationError("Upload a file or paste the text.")
        upload = data.get("file")
        if upload and hasattr(upload, "name"):
            data["source_format"] = Document.format_for_name(upload.name)
        return data


class ChunkInline(admin.TabularInline):
    model = Chunk
    fields = ["position", "anchor", "heading", "token_count", "preview"]
    readonly_fields = ("position", "anchor", "heading", "token_count", "preview")
    extra = 0
    can_delete = False
    show_change_link = False
    ordering = ["position"]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # chunks come from ingestion only

    @admin.display(description=_("text"))
    def preview(self, obj: Chunk) -> str:
        return obj.text[:400] + ("…" if len(obj.text) > 400 else "")


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    form = DocumentForm
    list_display = [
        "title",
        "language",
        "source_format",
        "status_badge",
        "progress",
        "chunk_count",
        "version",
        "updated_at",
    ]
    list_filter = ["status", "language", "source_format"]
    search_fields = ["title", "summary", "origin"]
    readonly_fields = [
        "status",
        "error",
        "progress",
        "summary",
        "chunk_count",
        "answer_cards",
        "content_hash",
        "version",
        "ingested_version",
        "ingested_at",
        "attempts",
    ]
    fieldsets = [
        (None, {"fields": ["title", "language", "origin"]}),
        ("Source", {"fields": ["file", "text", "source_format"]}),
        (
            "Ingestion",
            {
                "fields": [
                    "status",
                    "progress",
                    "error",
                    "summary",
                    "chunk_count",
                    "answer_cards",
                    "version",
                    "ingested_version",
                    "ingested_at",
                    "attempts",
                    "content_hash",
                ]
            },
        ),
    ]
    inlines = [ChunkInline]
    actions = ["reingest"]

    @admin.display(description=_("status"), ordering="status")
    def status_badge(self, obj: Document) -> str:
        colour: str = {
            Document.Status.READY: "#2e7d32",
            Document.Status.FAILED: "#c62828",
            Document.Status.INGESTING: "#1565c0",
        }.get(Document.Status(obj.status), "#6d6d6d")
        title = obj.error[:200] if obj.error else ""
        return format_html(
            '<span style="color:{}" title="{}">{}</span>', colour, title, obj.get_status_display()
        )

    @admin.display(description=_("progress"))
    def progress(self, obj: Document) -> str:
        if obj.status == Document.Status.READY:
            return "done"
        if not obj.progress_total:
            return "—"
        return f"{obj.progress_done}/{obj.progress_total}"

    @admin.display(description=_("answer cards"))
    def answer_cards(self, obj: Document) -> str:
        # From the article to its cards: after an edit, the ones to review again.
        if obj.pk is None:
            return "-"
        counts: dict[str, int] = dict(
            obj.cards.order_by().values_list("status").annotate(n=Count("pk"))
        )
        total = sum(counts.values())
        if not total:
            return "none yet: drafted after ingestion"
        waiting = counts.get(AnswerCard.Status.DRAFT, 0) + counts.get(AnswerCard.Status.STALE, 0)
        url = reverse("admin:knowledge_answercard_changelist") + f"?document__id__exact={obj.pk}"
        return format_html('<a href="{}">{} card(s), {} awaiting review</a>', url, total, waiting)

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        # The count of open conflicts above the list (the template links to them).
        extra_context = {
            **(extra_context or {}),
            "conflicts_open": conflicts.conflicts_open_count(),
        }
        return super().changelist_view(request, extra_context)

    def save_model(self, request: HttpRequest, obj: Document, form: Any, change: bool) -> None:
        services.document_save(document=obj)

    def delete_model(self, request: HttpRequest, obj: Document) -> None:
        services.document_delete(document_id=obj.pk)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        for document_id in list(queryset.values_list("pk", flat=True)):
            services.document_delete(document_id=document_id)

    @admin.action(description=_("Re-ingest selected documents"))
    def reingest(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        count = services.document_reingest(document_ids=list(queryset.values_list("pk", flat=True)))
        self.message_user(request, f"Queued {count} document(s) for ingestion.", messages.SUCCESS)

    # -- "try a question" -----------------------------------------------------------------
    def get_urls(self) -> list[Any]:
        urls = super().get_urls()
        mine = [
            path(
                "try/",
                self.admin_site.admin_view(self.try_question_view),
                name="knowledge_document_try",
            )
        ]
        return mine + urls

    def try_question_view(self, request: HttpRequest) -> HttpResponse:
        from .selectors import question_try

        form = TryQuestionForm(request.GET or None)
        result = None
        if form.is_valid():
            result = question_try(
                question=form.cleaned_data["question"],
                language=form.cleaned_data["language"] or None,
                method=form.cleaned_data["method"],
            )
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": _("Try a question"),
            "form": form,
            "result": result,
            "min_similarity": settings.TIERDESK_KB_MIN_SIMILARITY,
            "min_coverage": settings.TIERDESK_KB_MIN_KEYWORD_COVERAGE,
        }
        return TemplateResponse(request, "admin/knowledge/try_question.html", context)


class TryQuestionForm(forms.Form):
    question = forms.CharField(
        label=_("Question"), max_length=500, widget=forms.TextInput(attrs={"size": 80})
    )
    language = forms.ChoiceField(
        choices=[("", _("detect")), ("en", _("English")), ("zh", _("Chinese"))],
        required=False,
        label=_("Language"),
    )
    method = forms.ChoiceField(
        choices=[("hybrid", _("hybrid")), ("dense", _("dense only")), ("bm25", _("BM25 only"))],
        label=_("Method"),
        initial="hybrid",
        required=False,
    )

    def clean_method(self) -> str:
        return self.cleaned_data.get("method") or "hybrid"


@admin.register(DeletedSeedDocument)
class DeletedSeedDocumentAdmin(admin.ModelAdmin):
    """Demo articles a support admin deleted: the demo seed (run by ``make run`` on every
    start) leaves them out. *Restore* brings the shipped version back and ingests it."""

    list_display = ("title", "seed_key", "deleted_at")
    actions = ["restore"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Deleting the mark would restore the article only at the next start, silently
        # ("Delete selected deleted demo articles"): Restore is the one clear way.
        return False

    @admin.action(description=_("Restore the selected demo articles"))
    def restore(self, request: HttpRequest, queryset: QuerySet[DeletedSeedDocument]) -> None:
        from .seed import knowledge_seed, synonyms_seed

        keys = list(queryset.values_list("seed_key", flat=True))
        # Demo synonym sets are remembered here too ("synonyms:<key>").
        words = [k for k in keys if k.startswith("synonyms:")]
        if words:
            DeletedSeedDocument.objects.filter(seed_key__in=words).delete()
            self.message_user(request, f"{synonyms_seed()} demo synonym set(s) restored.")
            keys = [k for k in keys if k not in words]
            if not keys:
                return
        counts = knowledge_seed(keys=keys)
        self.message_user(
            request, f"{counts['created']} demo article(s) restored; ingestion is queued."
        )


def _marked(text: str, value: str) -> str:
    """The section, escaped, with the disputed value marked."""
    escaped, mark = str(escape(text)), str(escape(value))
    if mark and mark in escaped:
        escaped = escaped.replace(mark, f'<mark class="conflict-value">{mark}</mark>', 1)
    return mark_safe(escaped)


@admin.register(KnowledgeConflict)
class KnowledgeConflictAdmin(admin.ModelAdmin):
    """Two articles that state different values about one subject, side by side. Until
    it is resolved, L2 cites both for a question about the subject and offers a person."""

    list_display = ["about", "values", "document_a", "document_b", "status", "resolution"]
    list_filter = ["status", "kind", "language"]
    list_select_related = ["document_a", "document_b"]
    search_fields = ["text_a", "text_b", "document_a__title", "document_b__title"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # conflicts come from articles: the check runs after every ingestion

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.has_perm("knowledge.change_knowledgeconflict"))

    @admin.display(description=_("about"))
    def about(self, obj: KnowledgeConflict) -> str:
        return " ".join(obj.subject)

    @admin.display(description=_("values"))
    def values(self, obj: KnowledgeConflict) -> str:
        return f"{obj.value_a} / {obj.value_b}"

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: Any = None,
    ) -> HttpResponse:
        conflict = self.get_object(request, object_id)
        if conflict is None:
            return HttpResponseRedirect(reverse("admin:knowledge_knowledgeconflict_changelist"))
        if request.method == "POST":
            if not self.has_change_permission(request, conflict):
                return HttpResponse(status=403)
            resolution = request.POST.get("resolution", "")
            try:
                conflicts.conflict_resolve(
                    conflict_id=conflict.pk, resolution=resolution, user_id=request.user.pk
                )
            except ValueError:
                self.message_user(request, _("Choose how to resolve it."), messages.ERROR)
            else:
                self.message_user(request, _("Conflict resolved."), messages.SUCCESS)
                return HttpResponseRedirect(reverse("admin:knowledge_knowledgeconflict_changelist"))
        sides = [
            {
                "label": _("Article A"),
                "document": conflict.document_a,
                "url": reverse("admin:knowledge_document_change", args=[conflict.document_a_id]),
                "heading": conflict.heading_a,
                "value": conflict.value_a,
                "text": _marked(conflict.text_a, conflict.value_a),
                "keep": KnowledgeConflict.Resolution.KEPT_A,
            },
            {
                "label": _("Article B"),
                "document": conflict.document_b,
                "url": reverse("admin:knowledge_document_change", args=[conflict.document_b_id]),
                "heading": conflict.heading_b,
                "value": conflict.value_b,
                "text": _marked(conflict.text_b, conflict.value_b),
                "keep": KnowledgeConflict.Resolution.KEPT_B,
            },
        ]
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": _("Articles that disagree"),
            "conflict": conflict,
            "sides": sides,
            "both_right": KnowledgeConflict.Resolution.BOTH_RIGHT,
            "can_change": self.has_change_permission(request, conflict),
        }
        return TemplateResponse(
            request, "admin/knowledge/knowledgeconflict/side_by_side.html", context
        )
