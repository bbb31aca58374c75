"""An article as a support admin adds it: saved, ingested, its cards drafted and all
approved, on a fresh in-process index (for tests outside tests/knowledge)."""

from __future__ import annotations

from typing import Any


def approved_article(settings: Any, *, title: str, text: str, language: str = "en") -> int:
    """The document's id; every search checks the database (no refresh interval)."""
    from knowledge import cards, index, services
    from knowledge.models import AnswerCard

    settings.TIERDESK_KB_REFRESH_S = 0.0
    settings.TIERDESK_KB_SUMMARY_ROLE = ""
    index.reset()
    cards.cards_reset()
    doc = services.document_create(
        title=title, text=text, language=language, source_format="markdown"
    )
    services.document_ingest(document_id=doc.pk)
    cards.cards_sync(document_id=doc.pk)
    ids = list(AnswerCard.objects.filter(document=doc).values_list("pk", flat=True))
    cards.card_review(card_ids=ids, status=AnswerCard.Status.APPROVED, user_id=None)
    return doc.pk


def passage(
    chunk_id: int,
    heading: str,
    text: str,
    *,
    title: str,
    language: str = "en",
    relevant: bool = True,
) -> Any:
    """A retrieved passage ranked by its chunk id (``knowledge.retrieval.Passage``), for
    tests of what is done with retrieval's results."""
    from knowledge.retrieval import Passage

    return Passage(
        chunk_id=chunk_id,
        document_id=1,
        title=title,
        anchor=str(chunk_id),
        heading=heading,
        text=text,
        language=language,
        score=1.0 / chunk_id,
        similarity=0.5,
        coverage=0.5 if relevant else 0.1,
        bm25=None,
        relevant=relevant,
    )
