"""Where a citation points: the article's public help page, at the cited section."""

from __future__ import annotations


def article_url(document_id: int, anchor: str = "") -> str:
    """The help page of an article (``knowledge.help_pages``), at the section a citation
    names; "s1#2" is a piece of section "s1", and the page shows whole sections."""
    base = f"/help/{document_id}/"
    section = anchor.split("#", 1)[0]
    return f"{base}#{section}" if section else base
