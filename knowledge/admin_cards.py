"""Django admin for answer cards: the review queue, a card's page with its section, the
entailment check's verdict, the diff after an article edit, and the section's generated
questions (``knowledge.section_questions``), editable. Writes go through
``knowledge.cards`` and ``knowledge.section_questions``."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import Case, IntegerField, QuerySet, Value, When
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.utils.html import escape, format_html, format_html_join
from django.utils.safestring import mark_safe
from django.utils.translation import gettext_lazy as _

from . import cards, doc2query, section_questions
from .models import AnswerCard


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
            generated = section_questions.section_questions_active(
                document_id=self.instance.document_id, anchor=self.instance.anchor
            )
            self.fields["generated_questions_text"].initial = "\n".join(q.text for q in generated)
            # Every line in view without scrolling the box, up to a screenful.
            self.fields["generated_questions_text"].widget.attrs["rows"] = min(
                max(len(generated) + 1, 4), 24
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
