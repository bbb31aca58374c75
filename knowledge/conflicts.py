"""Articles that disagree: two sections of different documents, about one subject,
stating different values (a price, a duration, a percentage, a yes and a no).

Found after every ingestion (``conflicts_check``, the ``knowledge.conflicts_check``
task) and shown to the support admin side by side (``KnowledgeConflict`` in admin).
While one is open, L2 does not pick a side for a question about its subject: it cites
both and offers a person (``open_conflict_for``).

Two sections are compared when their embeddings (stored on the chunks) are close and
they are in one language; within them, two values are compared when they are of one
kind and unit and about the same subject words (``knowledge.values``). A section
that states both values ("$4.99, or $5.99 for large items") disagrees with nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from . import values as kvalues
from .article_links import article_url
from .models import AnswerCard, Chunk, Document, KnowledgeConflict

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SectionRef:
    document_id: int
    anchor: str  # without the "#n" of a section's later chunks
    heading: str
    language: str
    text: str
    vector: np.ndarray


@dataclass(frozen=True)
class Found:
    a: SectionRef
    b: SectionRef
    value_a: kvalues.Value
    value_b: kvalues.Value
    similarity: float


def section_anchor(anchor: str) -> str:
    return anchor.split("#", 1)[0]


def _disagreement(
    a: list[kvalues.Value], b: list[kvalues.Value]
) -> tuple[kvalues.Value, kvalues.Value] | None:
    """The first pair of values about one subject that differ, where neither section
    also states the other's value about that subject."""
    for va in a:
        for vb in b:
            if va.kind != vb.kind or va.unit != vb.unit:
                continue
            if not kvalues.subjects_match(va.subject, vb.subject) or va.same_as(vb):
                continue
            same_subject_a = [
                v for v in a if v.kind == va.kind and kvalues.subjects_match(v.subject, va.subject)
            ]
            same_subject_b = [
                v for v in b if v.kind == vb.kind and kvalues.subjects_match(v.subject, vb.subject)
            ]
            if any(v.same_as(vb) for v in same_subject_a):
                continue
            if any(v.same_as(va) for v in same_subject_b):
                continue
            return va, vb
    return None


def conflicts_find(
    sections: list[SectionRef], *, document_id: int | None = None, min_similarity: float
) -> list[Found]:
    """Disagreeing section pairs of different documents (those involving
    ``document_id`` only, when given). Pure: no database."""
    extracted = {id(s): kvalues.section_values(s.text, heading=s.heading) for s in sections}
    out: list[Found] = []
    for i, a in enumerate(sections):
        for b in sections[i + 1 :]:
            if a.document_id == b.document_id or a.language != b.language:
                continue
            if document_id is not None and document_id not in (a.document_id, b.document_id):
                continue
            similarity = float(a.vector @ b.vector)
            if similarity < min_similarity:
                continue
            pair = _disagreement(extracted[id(a)], extracted[id(b)])
            if pair is not None:
                out.append(Found(a, b, pair[0], pair[1], similarity))
    return out


def _sections(language: str) -> list[SectionRef]:
    """The ready documents' sections in ``language``: a section's chunks joined, its
    vector their mean (normalised)."""
    grouped: dict[tuple[int, str], list[Chunk]] = {}
    rows = (
        Chunk.objects.filter(document__status=Document.Status.READY, document__language=language)
        .select_related("document")
        .order_by("document_id", "position")
    )
    for chunk in rows:
        grouped.setdefault((chunk.document_id, section_anchor(chunk.anchor)), []).append(chunk)
    out = []
    for (document_id, anchor), chunks in grouped.items():
        vector = np.mean([c.vector() for c in chunks], axis=0)
        norm = float(np.linalg.norm(vector)) or 1.0
        out.append(
            SectionRef(
                document_id=document_id,
                anchor=anchor,
                heading=chunks[0].heading,
                language=language,
                text="\n".join(c.text for c in chunks),
                vector=(vector / norm).astype(np.float32),
            )
        )
    return out


def _ordered(found: Found) -> Found:
    # One row per pair, whichever document was ingested last: the lower id is "A".
    if (found.a.document_id, found.a.anchor) <= (found.b.document_id, found.b.anchor):
        return found
    return Found(found.b, found.a, found.value_b, found.value_a, found.similarity)


def conflicts_check(*, document_id: int) -> dict[str, int]:
    """Find the conflicts of one document's sections with every other document of its
    language. New ones are opened; open ones that no longer hold (an article was
    edited or deleted) are closed as edited; resolved ones are kept as resolved."""
    document = Document.objects.filter(pk=document_id).first()
    counts = {"opened": 0, "closed": 0, "kept": 0}
    involving = Q(document_a_id=document_id) | Q(document_b_id=document_id)
    if document is None or document.status != Document.Status.READY:
        closed = KnowledgeConflict.objects.filter(
            involving, status=KnowledgeConflict.Status.OPEN
        ).update(
            status=KnowledgeConflict.Status.RESOLVED,
            resolution=KnowledgeConflict.Resolution.EDITED,
            resolved_at=timezone.now(),
        )
        counts["closed"] = closed
        return counts
    found = [
        _ordered(f)
        for f in conflicts_find(
            _sections(document.language),
            document_id=document_id,
            min_similarity=settings.TIERDESK_KB_CONFLICT_SIMILARITY,
        )
    ]
    with transaction.atomic():
        existing = {
            c.key(): c for c in KnowledgeConflict.objects.select_for_update().filter(involving)
        }
        seen: set[tuple[int, str, int, str, str, str, str]] = set()
        for f in found:
            key = (
                f.a.document_id,
                f.a.anchor,
                f.b.document_id,
                f.b.anchor,
                f.value_a.kind,
                f.value_a.text,
                f.value_b.text,
            )
            if key in seen:
                continue
            seen.add(key)
            if key in existing:
                counts["kept"] += 1
                continue
            _conflict_open(f, document.language)
            counts["opened"] += 1
        for key, conflict in existing.items():
            if key not in seen and conflict.status == KnowledgeConflict.Status.OPEN:
                conflict.status = KnowledgeConflict.Status.RESOLVED
                conflict.resolution = KnowledgeConflict.Resolution.EDITED
                conflict.resolved_at = timezone.now()
                conflict.save(update_fields=["status", "resolution", "resolved_at"])
                counts["closed"] += 1
        if counts["opened"] or counts["closed"]:
            # L2 caches answers per knowledge-base version: one cached before the check
            # must not keep picking a side.
            from .services import kb_version_bump

            kb_version_bump()
    if counts["opened"]:
        logger.info("document %s: %d new conflict(s)", document_id, counts["opened"])
    return counts


def _conflict_open(f: Found, language: str) -> None:
    KnowledgeConflict.objects.create(
        document_a_id=f.a.document_id,
        anchor_a=f.a.anchor,
        heading_a=f.a.heading[:200],
        text_a=f.a.text,
        value_a=f.value_a.text,
        sentence_a=f.value_a.sentence,
        document_b_id=f.b.document_id,
        anchor_b=f.b.anchor,
        heading_b=f.b.heading[:200],
        text_b=f.b.text,
        value_b=f.value_b.text,
        sentence_b=f.value_b.sentence,
        kind=f.value_a.kind,
        subject=sorted(f.value_a.subject),
        language=language,
        similarity=round(f.similarity, 4),
    )


def conflicts_open_count() -> int:
    return KnowledgeConflict.objects.filter(status=KnowledgeConflict.Status.OPEN).count()


def conflict_resolve(
    *, conflict_id: int, resolution: str, user_id: int | None
) -> KnowledgeConflict:
    """Record how a support admin settled a conflict. Keeping one side rejects the
    other side's answer card, so that section's card is never served again."""
    if resolution not in KnowledgeConflict.Resolution.values:
        raise ValueError(f"unknown resolution {resolution!r}")
    with transaction.atomic():
        conflict = KnowledgeConflict.objects.select_for_update().get(pk=conflict_id)
        loser: tuple[int, str] | None = None
        if resolution == KnowledgeConflict.Resolution.KEPT_A:
            loser = (conflict.document_b_id, conflict.anchor_b)
        elif resolution == KnowledgeConflict.Resolution.KEPT_B:
            loser = (conflict.document_a_id, conflict.anchor_a)
        if loser is not None:
            AnswerCard.objects.filter(document_id=loser[0], anchor=loser[1]).update(
                status=AnswerCard.Status.REJECTED,
                reviewed_by_id=user_id,
                reviewed_at=timezone.now(),
            )
        conflict.status = KnowledgeConflict.Status.RESOLVED
        conflict.resolution = resolution
        conflict.resolved_by_id = user_id
        conflict.resolved_at = timezone.now()
        conflict.save()
    from .services import kb_version_bump

    kb_version_bump()
    return conflict


def open_conflict_for(*, document_id: int, anchor: str, question: str) -> KnowledgeConflict | None:
    """The open conflict the section (document, anchor) is a side of, when the
    question is about its subject (names every subject word); None otherwise."""
    anchor = section_anchor(anchor)
    rows = KnowledgeConflict.objects.filter(
        Q(document_a_id=document_id, anchor_a=anchor)
        | Q(document_b_id=document_id, anchor_b=anchor),
        status=KnowledgeConflict.Status.OPEN,
    ).select_related("document_a", "document_b")
    asked = kvalues.question_subject(question)
    return next((c for c in rows if _asks_about(c, asked)), None)


def _asks_about(conflict: KnowledgeConflict, asked: frozenset[str]) -> bool:
    """The question names every subject word of the conflict, and no case one of the
    two sections states apart from the disputed sentence ("if you are a Gold member,
    gift wrapping is free" answers a Gold member's question whatever the price)."""
    subject = set(conflict.subject)
    if not subject or not subject <= asked:
        return False
    cases: set[str] = set()
    for text, sentence in (
        (conflict.text_a, conflict.sentence_a),
        (conflict.text_b, conflict.sentence_b),
    ):
        cases |= kvalues.subject_words(text) - kvalues.subject_words(sentence)
    return not ((asked - subject) & cases)


DISPUTED = {
    "en": (
        "Our “{title_a}” article says: {sentence_a} Our “{title_b}” article says: "
        "{sentence_b} The two don't agree, so I won't pick one: a person on our team can "
        "tell you which applies."
    ),
    "zh": (
        "我们的《{title_a}》说：{sentence_a}而《{title_b}》说：{sentence_b}"
        "两篇说法不一致，我不替您挑一个；人工客服可以告诉您以哪个为准。"
    ),
}
# A conflict the support admin settled by keeping one article: its words, not the other's.
SETTLED = {
    "en": "Our “{title}” article says: {sentence}",
    "zh": "我们的《{title}》说：{sentence}",
}


@dataclass(frozen=True)
class Disputed:
    conflict_id: int
    text: str
    citations: list[dict[str, object]]
    # "offer:human" while the conflict is open; none once the admin kept one side.
    actions: tuple[str, ...] = ()


def _sentence(text: str, language: str) -> str:
    text = " ".join(text.split())
    if language == "zh":
        return text if text.endswith(("。", "！", "？")) else text + "。"
    return text if text.endswith((".", "!", "?")) else text + "."


def _side(conflict: KnowledgeConflict, side: str) -> dict[str, object]:
    document = conflict.document_a if side == "a" else conflict.document_b
    heading = conflict.heading_a if side == "a" else conflict.heading_b
    sentence = conflict.sentence_a if side == "a" else conflict.sentence_b
    anchor = conflict.anchor_a if side == "a" else conflict.anchor_b
    return {
        "document_id": document.pk,
        "title": document.title,
        "heading": heading.split(" > ")[-1] if heading else document.title,
        "anchor": anchor,
        "url": article_url(document.pk, anchor),
        "snippet": " ".join(sentence.split()),
    }


def disputed_answer(
    *, question: str, sections: Iterable[tuple[int, str]], language: str
) -> Disputed | None:
    """When a section an answer would come from is a side of a conflict about what the
    question asks (``_asks_about``): while it is open, both sides quoted and cited and
    the offer of a person; once the admin kept one side and the section is the other,
    the kept side's sentence. None otherwise (one query)."""
    wanted = Q(pk__in=[])
    for document_id, anchor in sections:
        anchor = section_anchor(anchor)
        wanted |= Q(document_a_id=document_id, anchor_a=anchor)
        wanted |= Q(document_b_id=document_id, anchor_b=anchor)
    kept = (KnowledgeConflict.Resolution.KEPT_A, KnowledgeConflict.Resolution.KEPT_B)
    rows = KnowledgeConflict.objects.filter(wanted).filter(
        Q(status=KnowledgeConflict.Status.OPEN) | Q(resolution__in=kept)
    )
    asked = kvalues.question_subject(question)
    given = {(d, section_anchor(a)) for d, a in sections}
    lang = language if language in DISPUTED else "en"
    for conflict in rows.select_related("document_a", "document_b").order_by("status"):
        if not _asks_about(conflict, asked):
            continue
        if conflict.status == KnowledgeConflict.Status.OPEN:
            text = DISPUTED[lang].format(
                title_a=conflict.document_a.title,
                sentence_a=_sentence(conflict.sentence_a or conflict.text_a, lang),
                title_b=conflict.document_b.title,
                sentence_b=_sentence(conflict.sentence_b or conflict.text_b, lang),
            )
            citations = [_side(conflict, "a"), _side(conflict, "b")]
            return Disputed(conflict.pk, text, citations, ("offer:human",))
        winner, loser = ("a", "b") if conflict.resolution == kept[0] else ("b", "a")
        loser_section = (
            (conflict.document_b_id, conflict.anchor_b)
            if loser == "b"
            else (conflict.document_a_id, conflict.anchor_a)
        )
        if loser_section not in given:
            continue
        cited = _side(conflict, winner)
        sentence = conflict.sentence_a if winner == "a" else conflict.sentence_b
        text = SETTLED[lang].format(title=cited["title"], sentence=_sentence(sentence, lang))
        return Disputed(conflict.pk, text, [cited])
    return None
