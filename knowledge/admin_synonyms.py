"""Django admin for the shop's words (``SynonymSet``): list and edit the sets with
validation, see which questions a set changes, and try a question to see what its
words expand to. Views stay thin: writes go through ``knowledge.services``, the
comparisons through ``knowledge.synonyms``."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from . import services, shop_words, synonyms
from .models import SynonymSet, split_terms


def _keys(terms: list[str], language: str) -> dict[str, str]:
    """{lookup key: the term as written} (English by stem, Chinese as written)."""
    zh = language == "zh"
    return {k: t for t in terms for k in shop_words.term_keys(t, zh=zh)}


class SynonymSetForm(forms.ModelForm):
    class Meta:
        model = SynonymSet
        fields = ["language", "kind", "terms", "target", "note", "enabled"]
        widgets = {
            "terms": forms.Textarea(attrs={"rows": 3, "cols": 80}),
            "target": forms.TextInput(attrs={"size": 60}),
        }
        labels = {
            "language": gettext_lazy("Language"),
            "kind": gettext_lazy("Kind"),
            "terms": gettext_lazy("Terms"),
            "target": gettext_lazy("Broader term"),
            "note": gettext_lazy("Note"),
            "enabled": gettext_lazy("Enabled"),
        }
        help_texts = {
            "terms": gettext_lazy(
                "Separated by commas or new lines. English terms match every form of the "
                "word (ship, shipping, shipped)."
            ),
            "target": gettext_lazy(
                "Broader sets only: what the terms are covered by, e.g. France for Lyon."
            ),
        }

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        language = data.get("language") or "en"
        kind = data.get("kind")
        terms = split_terms(data.get("terms") or "")
        target = split_terms(data.get("target") or "")
        if not terms or not _keys(terms, language):
            self.add_error("terms", _("Add at least one term."))
            return data
        if kind == SynonymSet.Kind.EQUIVALENT and len(_keys(terms, language)) < 2:
            self.add_error("terms", _("An equivalent set needs at least two different terms."))
        if kind == SynonymSet.Kind.BROADER:
            if not target:
                self.add_error(
                    "target",
                    _("A broader set needs a target: the term that covers the ones above."),
                )
            elif set(_keys(target, language)) & set(_keys(terms, language)):
                self.add_error("target", _("A term can't be broader than itself."))
        elif target:
            self.add_error("target", _("Only a broader set has a target; leave it empty."))
        if kind == SynonymSet.Kind.EQUIVALENT and data.get("enabled", True):
            self._equivalent_clash(terms, language)
        return data

    def _equivalent_clash(self, terms: list[str], language: str) -> None:
        """A term this edit adds that another enabled equivalent set already has: the
        two sets would have to be read as one, which the admin should decide."""
        old = self.instance
        before = set()
        if old.pk and old.language == language and old.kind == SynonymSet.Kind.EQUIVALENT:
            before = set(_keys(old.term_list(), language))
        added = {k: t for k, t in _keys(terms, language).items() if k not in before}
        others = SynonymSet.objects.filter(
            language=language, kind=SynonymSet.Kind.EQUIVALENT, enabled=True
        ).exclude(pk=self.instance.pk or -1)
        for other in others:
            shared = sorted(set(added) & set(_keys(other.term_list(), language)))
            if shared:
                self.add_error(
                    "terms",
                    _(
                        "“%(term)s” is already in the equivalent set “%(other)s”: add the "
                        "other terms to that set instead, or take it out of one of them."
                    )
                    % {"term": added[shared[0]], "other": str(other)},
                )
                return


class TryTermsForm(forms.Form):
    question = forms.CharField(
        label=gettext_lazy("Question"),
        max_length=500,
        widget=forms.TextInput(attrs={"size": 80}),
    )
    language = forms.ChoiceField(
        label=gettext_lazy("Language"),
        choices=[("", gettext_lazy("detect")), ("en", "English"), ("zh", "中文")],
        required=False,
    )


class ChangesForm(forms.Form):
    questions = forms.CharField(
        label=gettext_lazy("Also ask these questions (one a line)"),
        required=False,
        max_length=5000,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
    )


@admin.register(SynonymSet)
class SynonymSetAdmin(admin.ModelAdmin):
    form = SynonymSetForm
    list_display = ("__str__", "language", "kind", "enabled", "note", "updated_at")
    list_filter = ("language", "kind", "enabled")
    search_fields = ("terms", "target", "note")
    actions = ["enable", "disable"]

    def save_model(self, request: HttpRequest, obj: SynonymSet, form: Any, change: bool) -> None:
        services.synonym_set_save(synonym_set=obj)

    def delete_model(self, request: HttpRequest, obj: SynonymSet) -> None:
        services.synonym_set_delete(synonym_set_ids=[obj.pk])

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[SynonymSet]) -> None:
        services.synonym_set_delete(synonym_set_ids=list(queryset.values_list("pk", flat=True)))

    @admin.action(description=gettext_lazy("Enable the selected synonym sets"))
    def enable(self, request: HttpRequest, queryset: QuerySet[SynonymSet]) -> None:
        for row in queryset.filter(enabled=False):
            row.enabled = True
            services.synonym_set_save(synonym_set=row)

    @admin.action(description=gettext_lazy("Disable the selected synonym sets"))
    def disable(self, request: HttpRequest, queryset: QuerySet[SynonymSet]) -> None:
        for row in queryset.filter(enabled=True):
            row.enabled = False
            services.synonym_set_save(synonym_set=row)

    def _to_changes(self, request: HttpRequest, obj: SynonymSet) -> HttpResponse | None:
        if "_changes" not in request.POST:
            return None
        return HttpResponseRedirect(reverse("admin:knowledge_synonymset_changes", args=[obj.pk]))

    def response_add(self, request: HttpRequest, obj: SynonymSet, *args: Any) -> HttpResponse:
        return self._to_changes(request, obj) or super().response_add(request, obj, *args)

    def response_change(self, request: HttpRequest, obj: SynonymSet) -> HttpResponse:
        return self._to_changes(request, obj) or super().response_change(request, obj)

    def get_urls(self) -> list[Any]:
        mine = [
            path(
                "try/",
                self.admin_site.admin_view(self.try_view),
                name="knowledge_synonymset_try",
            ),
            path(
                "<int:pk>/changes/",
                self.admin_site.admin_view(self.changes_view),
                name="knowledge_synonymset_changes",
            ),
        ]
        return mine + super().get_urls()

    def changes_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        """The questions that find another section or card with this set than without."""
        row = get_object_or_404(SynonymSet, pk=pk)
        form = ChangesForm(request.GET or None)
        extra = (form.cleaned_data["questions"] or "").splitlines() if form.is_valid() else []
        report = synonyms.questions_changed(row, extra=extra)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": _("Questions it changes"),
            "form": form,
            "report": report,
            "row": row,
        }
        return TemplateResponse(request, "admin/knowledge/synonymset/changes.html", context)

    def try_view(self, request: HttpRequest) -> HttpResponse:
        form = TryTermsForm(request.GET or None)
        result = None
        if form.is_valid():
            result = synonyms.question_terms(
                form.cleaned_data["question"], language=form.cleaned_data["language"] or None
            )
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": _("Try a question"),
            "form": form,
            "result": result,
        }
        return TemplateResponse(request, "admin/knowledge/synonymset/try.html", context)
