"""Django admin for support admins: documents, ingestion status, chunk and summary
preview, re-ingest, and a "try a question" page that shows what retrieval returns and
why. Views stay thin: writes go through ``knowledge.services``, searches through
``knowledge.retrieval``."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path
from django.utils.html import format_html

from . import services
from .models import Chunk, Document


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

    @admin.display(description="text")
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

    @admin.display(description="status", ordering="status")
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

    @admin.display(description="progress")
    def progress(self, obj: Document) -> str:
        if obj.status == Document.Status.READY:
            return "done"
        if not obj.progress_total:
            return "—"
        return f"{obj.progress_done}/{obj.progress_total}"

    def save_model(self, request: HttpRequest, obj: Document, form: Any, change: bool) -> None:
        services.document_save(document=obj)

    def delete_model(self, request: HttpRequest, obj: Document) -> None:
        services.document_delete(document_id=obj.pk)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        for document_id in list(queryset.values_list("pk", flat=True)):
            services.document_delete(document_id=document_id)

    @admin.action(description="Re-ingest selected documents")
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
            "title": "Try a question",
            "form": form,
            "result": result,
            "min_similarity": settings.TIERDESK_KB_MIN_SIMILARITY,
            "min_coverage": settings.TIERDESK_KB_MIN_KEYWORD_COVERAGE,
        }
        return TemplateResponse(request, "admin/knowledge/try_question.html", context)


class TryQuestionForm(forms.Form):
    question = forms.CharField(max_length=500, widget=forms.TextInput(attrs={"size": 80}))
    language = forms.ChoiceField(
        choices=[("", "detect"), ("en", "English"), ("zh", "Chinese")], required=False
    )
    method = forms.ChoiceField(
        choices=[("hybrid", "hybrid"), ("dense", "dense only"), ("bm25", "BM25 only")],
        initial="hybrid",
        required=False,
    )

    def clean_method(self) -> str:
        return self.cleaned_data.get("method") or "hybrid"
