"""Django admin for support admins: documents, ingestion status, chunk and summary
preview, re-ingest, and a "try a question" page that shows what retrieval returns and
why. Views stay thin: writes go through ``knowledge.services``, searches through
``knowledge.retrieval``."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.db.models import Case, Count, IntegerField, QuerySet, Value, When
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import escape, format_html, format_html_join
from django.utils.safestring import mark_safe
from django.utils.translation import gettext_lazy as _

# admin_synonyms registers the synonym sets' admin.
from . import admin_synonyms, cards, conflicts, doc2query, section_questions, services  # noqa: F401
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


class AnswerCardForm(forms.ModelForm):
    """Phrasings one per line; the answer is checked against its section on save."""

    questions_text = forms.CharField(
        label=_("Questions"),
        widget=forms.Textarea(attrs={"rows": 4, "cols": 80}),
        help_text=_("One way a shopper might ask, a line each."),
    )

    generated_questions_text = forms.CharField(
        label=_("Questions that find this section"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 10, "cols": 80}),
        help_text=_(
            "Written by the worker when the article was added: other wordings, in English "
            "and Chinese, and cases the section covers. A shopper's question close to one "
            "of them finds this section and this card. One a line: edit, delete or add "
            "lines; your changes are kept when the article changes."
        ),
    )

    class Meta:
        model = AnswerCard
        fields = ["answer"]
        widgets = {"answer": forms.Textarea(attrs={"rows": 4, "cols": 80})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance and self.instance.pk:
            self.fields["questions_text"].initial = "\n".join(self.instance.questions)
            self.fields["generated_questions_text"].initial = "\n".join(
                q.text
                for q in section_questions.section_questions_active(
                    document_id=self.instance.document_id, anchor=self.instance.anchor
                )
            )

    def clean_generated_questions_text(self) -> list[str]:
        raw = self.cleaned_data["generated_questions_text"]
        lines = [" ".join(q.split()) for q in raw.splitlines()]
        too_long = [q for q in lines if len(q) > doc2query.MAX_CHARS]
        if too_long:
            raise forms.ValidationError(
                _("A question may be at most %(n)d characters: “%(q)s…”")
                % {"n": doc2query.MAX_CHARS, "q": too_long[0][:60]}
            )
        return [q for q in lines if q]

    def clean_questions_text(self) -> list[str]:
        lines = [q.strip() for q in self.cleaned_data["questions_text"].splitlines()]
        lines = [q for q in lines if q]
        if not lines:
            raise forms.ValidationError("Give at least one question.")
        return lines


def _diff(old: str, new: str) -> str:
    """Word-level diff of the section's old and new text, for review after an edit."""
    import difflib

    a, b = old.split(), new.split()
    out: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b).get_opcodes():
        if op == "equal":
            out.append(escape(" ".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(f'<del class="card-del">{escape(" ".join(a[i1:i2]))}</del>')
        if j2 > j1:
            out.append(f'<ins class="card-ins">{escape(" ".join(b[j1:j2]))}</ins>')
    return " ".join(out)


# How each claim of a card's answer fared in the entailment check, in a reviewer's words.
CLAIM_LABELS = {
    "entailed": ("#1a7f37", "✓ said by the section:"),
    "contradicted": ("#cf222e", "✗ contradicts the section:"),
    "neutral": ("#9a6700", "? not in the section:"),
}


@admin.register(AnswerCard)
class AnswerCardAdmin(admin.ModelAdmin):
    """The review queue: drafts and cards whose article changed first."""

    form = AnswerCardForm
    list_display = [
        "first_question",
        "answer_preview",
        "document",
        "language",
        "status_badge",
        "check_badge",
    ]
    list_filter = ["status", "language", "document"]
    search_fields = ["answer", "section_text", "document__title"]
    list_select_related = ["document"]
    actions = ["approve", "reject", "back_to_draft"]
    readonly_fields = [
        "document",
        "heading",
        "status",
        "section",
        "check_result",
        "changes",
        "drafted_by",
        "reviewed_by",
        "reviewed_at",
        "generated_questions_made",
    ]
    fieldsets = [
        (None, {"fields": ["document", "heading", "status", "section"]}),
        ("The card", {"fields": ["questions_text", "answer", "check_result"]}),
        (
            _("Generated questions"),
            {"fields": ["generated_questions_text", "generated_questions_made"]},
        ),
        (
            "History",
            {"fields": ["drafted_by", "reviewed_by", "reviewed_at"], "classes": ["collapse"]},
        ),
    ]

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        fieldsets = list(super().get_fieldsets(request, obj))
        # A card sent back to review shows what changed first: that is what the
        # reviewer has to judge, before reading the redrafted answer.
        if (
            obj is not None
            and obj.previous_section_text
            and obj.status != AnswerCard.Status.APPROVED
        ):
            fieldsets.insert(1, ("What changed in the article", {"fields": ["changes"]}))
        return fieldsets

    def get_ordering(self, request: HttpRequest) -> list[Any]:
        # The review queue: cards whose article changed, then drafts, then the rest.
        # Set here, not on the queryset: the change list re-orders by this (default -pk).
        queue = Case(
            When(status=AnswerCard.Status.STALE, then=Value(0)),
            When(status=AnswerCard.Status.DRAFT, then=Value(1)),
            default=Value(2),
            output_field=IntegerField(),
        )
        return [queue.asc(), "document__title", "anchor"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # cards come from articles: edit the article to add a section

    @admin.display(description=_("question"))
    def first_question(self, obj: AnswerCard) -> str:
        return obj.questions[0] if obj.questions else obj.heading

    @admin.display(description=_("answer"))
    def answer_preview(self, obj: AnswerCard) -> str:
        return obj.answer if len(obj.answer) <= 120 else obj.answer[:119] + "…"

    @admin.display(description=_("status"), ordering="status")
    def status_badge(self, obj: AnswerCard) -> str:
        colours = {
            "approved": "#1a7f37",
            "draft": "#9a6700",
            "stale": "#cf222e",
            "rejected": "#57606a",
        }
        return format_html(
            '<b style="color:{}">{}</b>', colours.get(obj.status, "#000"), obj.get_status_display()
        )

    @admin.display(description=_("backed by the article"))
    def check_badge(self, obj: AnswerCard) -> str:
        return "yes" if obj.entailed else "NO"

    @admin.display(description=_("section of the article"))
    def section(self, obj: AnswerCard) -> str:
        return format_html(
            '<div style="max-width:60em;white-space:pre-wrap">{}</div>', obj.section_text
        )

    @admin.display(description=_("backed by the section"))
    def check_result(self, obj: AnswerCard) -> str:
        claims = obj.verdict.get("claims", [])
        if not claims:
            return "-"
        rows = format_html_join(
            "",
            '<li><b style="color:{}">{}</b> {} <i class="card-why">{}</i></li>',
            (
                (
                    *CLAIM_LABELS.get(c.get("label", ""), ("#000", c.get("label", ""))),
                    c.get("text", ""),
                    c.get("reason", ""),
                )
                for c in claims
            ),
        )
        return format_html('<ul class="card-claims">{}</ul>', rows)

    @admin.display(description=_("section, old → new"))
    def changes(self, obj: AnswerCard) -> str:
        if not obj.previous_section_text:
            return "-"
        return format_html(
            '<div class="card-diff">{}</div><p><b>Answer before:</b> {}</p>',
            # _diff escapes every word it emits.
            mark_safe(_diff(obj.previous_section_text, obj.section_text)),
            obj.previous_answer,
        )

    @admin.display(description=_("how each was written"))
    def generated_questions_made(self, obj: AnswerCard) -> str:
        rows = section_questions.section_questions_active(
            document_id=obj.document_id, anchor=obj.anchor
        )
        if not rows:
            return str(_("None yet: the worker writes them after the article is ingested."))
        return format_html(
            '<table class="generated-questions"><tr><th>{}</th><th>{}</th><th>{}</th>'
            "<th>{}</th></tr>{}</table>",
            _("question"),
            _("language"),
            _("kind"),
            _("by"),
            format_html_join(
                "",
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                ((q.text, q.language, q.get_role_display(), q.get_source_display()) for q in rows),
            ),
        )

    def save_model(self, request: HttpRequest, obj: AnswerCard, form: Any, change: bool) -> None:
        cards.card_edit(card=obj, questions=form.cleaned_data["questions_text"], answer=obj.answer)
        if "generated_questions_text" in form.changed_data:
            section_questions.section_questions_edit(
                document_id=obj.document_id,
                anchor=obj.anchor,
                lines=form.cleaned_data["generated_questions_text"],
            )
        if not obj.entailed:
            messages.warning(
                request,
                "Saved, but the answer says something its section doesn't, so it can't be "
                'approved until it does: see "backed by the section".',
            )

    def _review(
        self, request: HttpRequest, queryset: QuerySet[AnswerCard], status: str, done: str
    ) -> None:
        try:
            n = cards.card_review(
                card_ids=list(queryset.values_list("pk", flat=True)),
                status=status,
                user_id=request.user.pk,
            )
        except cards.CardError as exc:
            self.message_user(request, str(exc), level=messages.ERROR)
            return
        self.message_user(request, f"{n} card(s) {done}.")

    @admin.action(description=_("Approve: shoppers get these answers"))
    def approve(self, request: HttpRequest, queryset: QuerySet[AnswerCard]) -> None:
        self._review(request, queryset, AnswerCard.Status.APPROVED, "approved")

    @admin.action(description=_("Reject"))
    def reject(self, request: HttpRequest, queryset: QuerySet[AnswerCard]) -> None:
        self._review(request, queryset, AnswerCard.Status.REJECTED, "rejected")

    @admin.action(description=_("Send back to draft"))
    def back_to_draft(self, request: HttpRequest, queryset: QuerySet[AnswerCard]) -> None:
        self._review(request, queryset, AnswerCard.Status.DRAFT, "sent back to draft")

    def response_change(self, request: HttpRequest, obj: AnswerCard) -> HttpResponse:
        # The change form's own Approve / Reject buttons (templates/admin/knowledge/answercard).
        for key, status, done in (
            ("_approve", AnswerCard.Status.APPROVED, "approved"),
            ("_reject", AnswerCard.Status.REJECTED, "rejected"),
        ):
            if key in request.POST:
                self._review(request, AnswerCard.objects.filter(pk=obj.pk), status, done)
                return HttpResponseRedirect(request.path)
        return super().response_change(request, obj)


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
