"""Reads for the knowledge base (admin pages, the evaluation)."""

from __future__ import annotations

from typing import Any

from .models import Chunk, Document
from .text import language_detect


def question_try(*, question: str, language: str | None, method: str = "hybrid") -> dict[str, Any]:
    """What retrieval returns for a question, with every score, for the admin page."""

    from .cards import card_match
    from .retrieval import passages_retrieve

    lang = language or language_detect(question)
    result = passages_retrieve(question=question, language=lang, method=method)
    card = card_match(question=question, language=lang)
    return {
        # The approved card the bot would serve, and by what it matched.
        "card": None
        if card is None
        else {
            "id": card.row.card_id,
            "question": card.row.question,
            "heading": card.row.heading,
            "answer": card.row.answer,
            "how": card.how,
            "score": round(card.score, 3),
        },
        "question": question,
        "language": lang,
        "keywords": result.keywords,
        "method": method,
        "cross_language": result.cross_language,
        "passages": result.passages,
        "answered": any(p.relevant for p in result.passages),
        "timings": {k: round(v, 1) for k, v in result.timings_ms.items()},
        "index_version": result.index_version,
        "index_size": result.index_size,
    }


def document_chunks(*, document_id: int) -> list[Chunk]:
    return list(Chunk.objects.filter(document_id=document_id).order_by("position"))


def documents_ready(*, language: str | None = None) -> list[Document]:
    qs = Document.objects.filter(status=Document.Status.READY)
    if language:
        qs = qs.filter(language=language)
    return list(qs)
