"""The shop's public help pages: each ready article as a page whose sections carry the
anchors the bot's citations name, so a source under a reply opens the passage it quotes.

Markdown is rendered with raw HTML off (an article's HTML is shown as text) and links
only to http(s) and mailto addresses, each opening in a new tab without the opener.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.cache import cache
from django.utils.html import escape, linebreaks
from markdown_it import MarkdownIt

from . import ingest
from .models import Document
from .services import document_bytes

_SAFE_SCHEMES = ("http://", "https://", "mailto:")
_CACHE_S = 3600


@dataclass(frozen=True)
class HelpSection:
    anchor: str
    heading: str
    html: str


@dataclass(frozen=True)
class HelpArticle:
    document_id: int
    title: str
    language: str
    sections: tuple[HelpSection, ...]


@dataclass(frozen=True)
class HelpLink:
    document_id: int
    title: str
    language: str


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False})
    # markdown-it's documented hook for which link targets it renders as links.
    md.validateLink = lambda url: url.strip().lower().startswith(_SAFE_SCHEMES)  # type: ignore[method-assign]

    def link_open(renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
        tokens[idx].attrSet("target", "_blank")
        tokens[idx].attrSet("rel", "noopener noreferrer nofollow")
        return str(renderer.renderToken(tokens, idx, options, env))

    md.add_render_rule("link_open", link_open)
    return md


def help_article(document_id: int) -> HelpArticle | None:
    """The article as its help page shows it; None unless it is ready (a draft or a
    failed upload is not published)."""
    doc = Document.objects.filter(pk=document_id, status=Document.Status.READY).first()
    if doc is None:
        return None
    key = f"tierdesk:help:{doc.pk}:{doc.content_hash}"
    cached = cache.get(key)
    if isinstance(cached, HelpArticle):
        return cached
    sections = ingest.document_sections(data=document_bytes(doc), source_format=doc.source_format)
    md = _markdown() if doc.source_format == Document.Format.MARKDOWN else None
    shown = tuple(
        HelpSection(
            anchor=s.anchor,
            heading=s.heading.split(" > ")[-1] if s.heading else "",
            html=md.render(s.text) if md is not None else linebreaks(escape(s.text)),
        )
        for s in sections
    )
    article = HelpArticle(doc.pk, doc.title, doc.language, shown)
    cache.set(key, article, _CACHE_S)
    return article


def help_index(language: str = "") -> list[HelpLink]:
    """The ready articles, by title; one language's when ``language`` is given."""
    rows = Document.objects.filter(status=Document.Status.READY)
    if language:
        rows = rows.filter(language=language)
    return [
        HelpLink(pk, title, lang)
        for pk, title, lang in rows.order_by("title").values_list("pk", "title", "language")
    ]


def help_has_articles(language: str) -> bool:
    """Whether any article in ``language`` is published (the index's language switch)."""
    return Document.objects.filter(status=Document.Status.READY, language=language).exists()
