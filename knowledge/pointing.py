"""Point, don't shrug: a hedged quote of the section a question is clearly about.

When the answer checks can't confirm that any section answers a question (L2's
coverage check and judge refuse, a reply's branch of a rule doesn't cover the case the
question names, L3's model can't answer in time), but one section is clearly about
the question, the shopper gets that section's own words with its citation and the
offer of a person ("Our "Shipping" article says: "We ship to France and Belgium
only." …"), instead of "I couldn't find that". The quote is the article's sentences,
never phrased as a yes or a no: whether they answer the question is left to the
shopper (or the person). Replies built so are marked ``pointed`` (the ``done`` frame,
the stored metadata) and the evaluation counts them apart, never as answered.

"Clearly about": the answerability classifier's section (``knowledge.answerability``)
when it is on; else the best section of the question's language (its best chunk) has a
cosine with the question of at least ``TIERDESK_KB_POINT_MIN_SIMILARITY`` and leads
the next section by ``TIERDESK_KB_POINT_MIN_LEAD``. English is scored by MiniLM (the
index's own vectors); a language MiniLM doesn't read, by the multilingual embedder
where it is configured (its own pair of thresholds: e5's cosines are higher and
closer together), and not at all otherwise. Blocking (embedding): a worker thread.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.conf import settings

from . import embedding, multilingual
from .grounding import passage_extract
from .retrieval import Passage, dense_trusted

logger = logging.getLogger(__name__)

POINTED = {
    "en": (
        'Our "{title}" article says: "{quote}" I can\'t confirm from it that this answers '
        'your question. Reply "yes" and a person on our team will help.'
    ),
    "zh": (
        "我们的《{title}》一文写道：“{quote}” "
        "我无法确认这是否回答了您的问题；回复“是”，我们的人工客服会为您解答。"
    ),
}


@dataclass(frozen=True)
class Pointer:
    """The section a question is clearly about: its best chunk, as a passage."""

    passage: Passage
    similarity: float
    lead: float
    embedder: str  # "minilm" | "multilingual"

    def record(self, why: str) -> dict[str, Any]:
        """The ``pointed`` marker: what was quoted and why (metadata, ``done`` frame)."""
        return {
            "why": why,
            "document_id": self.passage.document_id,
            "chunk_id": self.passage.chunk_id,
            "similarity": round(self.similarity, 3),
            "lead": round(self.lead, 3),
            "embedder": self.embedder,
        }


def _scorer(language: str) -> tuple[str, float, float] | None:
    """Which embedder scores this language, and its two thresholds (None: none does)."""
    if multilingual.enabled_for(language):
        return (
            "multilingual",
            settings.TIERDESK_KB_POINT_MIN_SIMILARITY_MULTILINGUAL,
            settings.TIERDESK_KB_POINT_MIN_LEAD_MULTILINGUAL,
        )
    if dense_trusted(language):
        return (
            "minilm",
            settings.TIERDESK_KB_POINT_MIN_SIMILARITY,
            settings.TIERDESK_KB_POINT_MIN_LEAD,
        )
    return None


def _passage(snap: Any, row: int, similarity: float) -> Passage:
    node = snap.nodes[row]
    meta = node.metadata
    return Passage(
        chunk_id=int(node.node_id) if node.node_id.isdigit() else row,
        document_id=int(meta["document_id"]),
        title=str(meta["title"]),
        anchor=str(meta["anchor"]),
        heading=str(meta.get("heading", "")),
        text=node.get_content(),
        language=str(meta["language"]),
        score=similarity,
        similarity=similarity,
        coverage=0.0,
        bm25=None,
        relevant=False,
    )


def section_scores(question: str, language: str, snapshot: Any = None) -> list[tuple[int, float]]:
    """One (row, cosine) per section of the question's language (its best chunk),
    best first. Empty when no embedder scores the language."""
    from .index import get_snapshot

    scorer = _scorer(language)
    snap = snapshot or get_snapshot()
    seg = snap.segment(language) if snap.has_language(language) else None
    if scorer is None or seg is None:
        return []
    if scorer[0] == "multilingual":
        if seg.ml_matrix is None:
            return []
        matrix, vector = seg.ml_matrix, multilingual.embed_query(question)
    else:
        matrix, vector = seg.matrix, embedding.embed_query(question)
    best: dict[tuple[int, str], tuple[int, float]] = {}
    for row, score in snap.top(seg, matrix, np.asarray(vector), len(seg)):
        meta = snap.nodes[row].metadata
        key = (int(meta["document_id"]), str(meta.get("heading", "")))
        if key not in best or score > best[key][1]:
            best[key] = (row, score)
    return sorted(best.values(), key=lambda x: -x[1])


def clearly_about(question: str, language: str, snapshot: Any = None) -> Pointer | None:
    """The section the question is clearly about, or None (blocking). With the
    answerability classifier on, it decides (a section it says answers or is about the
    question); else the two thresholds below do."""
    if not settings.TIERDESK_KB_POINT:
        return None
    if settings.TIERDESK_KB_ANSWERABILITY:
        from .answerability import ModelError, decide_for

        try:
            decision = decide_for(question, language)
        except (ModelError, OSError):
            logger.exception("answerability model unusable; the thresholds decide")
        else:
            if decision.candidate is None:
                return None
            best = decision.candidate.best
            return Pointer(
                passage=best, similarity=best.similarity, lead=0.0, embedder="answerability"
            )
    scorer = _scorer(language)
    if scorer is None:
        return None
    from .index import get_snapshot

    snap = snapshot or get_snapshot()
    ranked = section_scores(question, language, snap)
    if not ranked:
        return None
    (row, top) = ranked[0]
    second = ranked[1][1] if len(ranked) > 1 else 0.0
    name, min_similarity, min_lead = scorer
    if top < min_similarity or top - second < min_lead:
        return None
    return Pointer(
        passage=_passage(snap, row, top), similarity=top, lead=top - second, embedder=name
    )


def pointer_for(passage: Passage) -> Pointer:
    """A passage the answer path already chose (a card's section, the best cited one),
    as the thing to point at when its answer can't stand."""
    return Pointer(passage=passage, similarity=passage.similarity, lead=0.0, embedder="chosen")


def quote_of(question: str, passage: Passage) -> str:
    """The section's own words: all of it when it is short enough to read in the chat
    (a rule with branches is quoted with every branch, never one picked for the
    shopper), else its sentences nearest the question."""
    whole = " ".join(passage.text.split())
    if len(whole) <= settings.TIERDESK_KB_EXTRACT_CHARS * 3 // 2:
        return whole.strip('“”"')
    quote = passage_extract(question, [passage.text], max_chars=settings.TIERDESK_KB_EXTRACT_CHARS)
    return quote.strip().strip('“”"')


def pointed_text(question: str, language: str, pointer: Pointer) -> str:
    """The hedged reply: the article's title, the quote, the offer of a person."""
    lang = language if language in POINTED else "en"
    return POINTED[lang].format(
        title=pointer.passage.title, quote=quote_of(question, pointer.passage)
    )


def pointer_at(document_id: int, anchor: str, snapshot: Any = None) -> Pointer | None:
    """The section an answer card was written from (its document and anchor), as the
    thing to point at when the card's answer can't stand for the question's case."""
    from .index import get_snapshot

    snap = snapshot or get_snapshot()
    base = anchor.split("#", 1)[0]
    for row, node in enumerate(snap.nodes):
        meta = node.metadata
        if int(meta["document_id"]) == document_id and str(meta["anchor"]).split("#", 1)[0] == base:
            return Pointer(
                passage=_passage(snap, row, 0.0), similarity=0.0, lead=0.0, embedder="card"
            )
    return None
