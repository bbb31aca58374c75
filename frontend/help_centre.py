"""The shop's public help centre: the index of its articles and one page per article,
which the sources under the bot's replies link to (knowledge.help_pages)."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import translation
from django.views.decorators.http import require_GET

from chatbot.refusals import DJANGO_LANGUAGES as _SITE_LANGUAGE
from knowledge.help_pages import help_article, help_has_articles, help_index


def _article_language(request: HttpRequest) -> str:
    asked = request.GET.get("lang", "")
    if asked in _SITE_LANGUAGE:
        return asked
    return "zh" if (request.LANGUAGE_CODE or "").startswith("zh") else "en"


@require_GET
def index(request: HttpRequest) -> HttpResponse:
    language = _article_language(request)
    other = "en" if language == "zh" else "zh"
    with translation.override(_SITE_LANGUAGE[language]):
        return render(
            request,
            "frontend/help/index.html",
            {
                "articles": help_index(language),
                "language": _SITE_LANGUAGE[language],
                "other": other,
                "has_other": help_has_articles(other),
            },
        )


@require_GET
def article(request: HttpRequest, document_id: int) -> HttpResponse:
    found = help_article(document_id)
    if found is None:
        raise Http404("no published article with this id")
    # The page speaks the article's language, whatever the browser's.
    language = _SITE_LANGUAGE.get(found.language, "en")
    with translation.override(language):
        return render(
            request,
            "frontend/help/article.html",
            {"article": found, "language": language, "index_lang": found.language},
        )
