"""The generated questions of each section: written at ingestion, edited by support
admins, matched against shoppers' questions.

- ``section_questions_sync(document_id)`` (Celery, after every ingestion) writes the
  questions of new or changed sections (``knowledge.doc2query``) and embeds them with
  the multilingual embedder; an unchanged section keeps its questions, a removed one
  loses them. An admin's own questions, and the generated ones an admin deleted (kept
  as ``suppressed``), survive regeneration.
- ``section_questions_edit`` is the card page's edit: the admin's list of lines.
- ``questions_for(chunk_ids)`` and ``section_similarity(question)`` read the questions
  (the retrieval fusion, card matching and the answerability features use them).

Every write bumps the knowledge-base version in its transaction, so the per-process
index below and every KB-version cache key move with it.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np
from django.conf import settings
from django.db import transaction

from inference.versioned import VersionedCache

from . import doc2query, ingest, multilingual, shop_words
from .index import KB_VERSION
from .models import Chunk, Document, SectionQuestion

logger = logging.getLogger(__name__)

DIM = multilingual.DIM


def section_anchor(chunk_anchor: str) -> str:
    """The section a chunk belongs to: "returns#2" -> "returns"."""
    return chunk_anchor.split("#", 1)[0]


def section_hash(section: ingest.Section) -> str:
    return hashlib.sha256(f"{section.heading}\n{section.text}".encode()).hexdigest()


def _embed(texts: list[str]) -> list[bytes | None]:
    if not texts or not multilingual.available():
        return [None] * len(texts)
    vectors = multilingual.embed_queries(texts)
    return [np.ascontiguousarray(v, dtype="<f4").tobytes() for v in vectors]


def section_questions_sync(*, document_id: int) -> dict[str, int]:
    """Bring a document's generated questions in line with its ingested sections
    (idempotent: an unchanged section keeps its questions; blocking: may call a model)."""
    from .services import document_bytes, kb_version_bump

    counts = {"sections": 0, "written": 0, "kept": 0, "removed": 0}
    document = Document.objects.filter(pk=document_id, status=Document.Status.READY).first()
    if document is None:
        return counts
    sections = [
        s
        for s in ingest.document_sections(
            data=document_bytes(document), source_format=document.source_format
        )
        if s.text.strip()
    ]
    rows = list(SectionQuestion.objects.filter(document_id=document_id))
    done = {r.anchor: r.section_hash for r in rows if r.source == SectionQuestion.Source.GENERATED}
    words = shop_words.enabled_sets()
    role = settings.TIERDESK_KB_QUESTIONS_ROLE
    fresh: dict[str, tuple[str, list[doc2query.Generated]]] = {}
    for section in sections:
        digest = section_hash(section)
        if done.get(section.anchor) == digest:
            counts["kept"] += 1
            continue
        written = doc2query.section_questions_write(
            section, language=document.language, words=words, role=role
        )
        fresh[section.anchor] = (digest, written)
    counts["sections"] = len(sections)
    # Which texts the admin owns (edited) or deleted (suppressed), per section.
    owned: dict[str, set[str]] = {}
    for r in rows:
        if r.source == SectionQuestion.Source.EDITED or r.suppressed:
            owned.setdefault(r.anchor, set()).add(_key(r.text))
    new_rows: list[SectionQuestion] = []
    for anchor, (digest, written) in fresh.items():
        keep = owned.get(anchor, set())
        for q in written:
            if _key(q.text) not in keep:
                new_rows.append(
                    SectionQuestion(
                        document_id=document_id,
                        anchor=anchor,
                        section_hash=digest,
                        text=q.text,
                        language=q.language,
                        role=q.role,
                    )
                )
    vectors = _embed([r.text for r in new_rows])
    for r, v in zip(new_rows, vectors, strict=True):
        r.embedding = v
    live = {s.anchor for s in sections}
    with transaction.atomic():
        gone = SectionQuestion.objects.filter(document_id=document_id).exclude(anchor__in=live)
        counts["removed"] = gone.delete()[0]
        for anchor, (digest, _written) in fresh.items():
            stale = SectionQuestion.objects.filter(
                document_id=document_id,
                anchor=anchor,
                source=SectionQuestion.Source.GENERATED,
                suppressed=False,
            )
            counts["removed"] += stale.delete()[0]
            # The admin's deletions now stand for this version of the section.
            SectionQuestion.objects.filter(
                document_id=document_id, anchor=anchor, suppressed=True
            ).update(section_hash=digest)
        SectionQuestion.objects.bulk_create(new_rows, ignore_conflicts=True)
        counts["written"] = len(new_rows)
        if fresh or counts["removed"]:
            kb_version_bump()
    logger.info("generated questions of document %s: %s", document_id, counts)
    return counts


def _key(text: str) -> str:
    return " ".join(text.lower().split())


class QuestionEditError(ValueError):
    pass


def section_questions_edit(*, document_id: int, anchor: str, lines: Sequence[str]) -> int:
    """Make the section's active questions exactly ``lines`` (an admin's edit on the card
    page): a line already there stays as it is; a new line is the admin's own question;
    a generated question left out is kept as deleted (regeneration won't bring it back),
    an admin's own one left out is removed. Returns how many questions changed."""
    wanted: dict[str, str] = {}
    for line in lines:
        text = " ".join(line.split())
        if len(text) > doc2query.MAX_CHARS:
            raise QuestionEditError(
                f"a question may be at most {doc2query.MAX_CHARS} characters: {text[:60]}…"
            )
        if text:
            wanted.setdefault(_key(text), text)
    from . import text as ktext
    from .services import kb_version_bump

    changed = 0
    with transaction.atomic():
        rows = {
            _key(r.text): r
            for r in SectionQuestion.objects.select_for_update().filter(
                document_id=document_id, anchor=anchor
            )
        }
        for key, row in rows.items():
            if key in wanted:
                if row.suppressed:
                    row.suppressed = False
                    row.save(update_fields=["suppressed", "updated_at"])
                    changed += 1
                continue
            if row.suppressed:
                continue
            if row.source == SectionQuestion.Source.GENERATED:
                row.suppressed = True
                row.save(update_fields=["suppressed", "updated_at"])
            else:
                row.delete()
            changed += 1
        added = [text for key, text in wanted.items() if key not in rows]
        for text, vector in zip(added, _embed(added), strict=True):
            SectionQuestion.objects.create(
                document_id=document_id,
                anchor=anchor,
                text=text,
                language=ktext.language_detect(text),
                role=SectionQuestion.Role.WORDING,
                source=SectionQuestion.Source.EDITED,
                embedding=vector,
            )
            changed += 1
        if changed:
            kb_version_bump()
    return changed


def section_questions_active(*, document_id: int, anchor: str) -> list[SectionQuestion]:
    """The questions that match for a section, as the card page lists them: the
    admin's own first (what the admin wrote is what the admin looks for), then the
    generated ones in the order they were written."""
    rows = SectionQuestion.objects.filter(
        document_id=document_id, anchor=anchor, suppressed=False
    ).order_by("pk")
    return sorted(rows, key=lambda r: r.source != SectionQuestion.Source.EDITED)


# -- reading -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class GeneratedQuestion:
    """One active question of a section, with its multilingual vector (None when the
    embedder was off when it was written)."""

    text: str
    language: str
    role: str  # "wording" | "instance"
    source: str  # "generated" | "edited"
    vector: np.ndarray | None


@dataclass
class QuestionIndex:
    version: int
    # (document_id, section anchor) -> its questions, in order.
    by_section: dict[tuple[int, str], list[GeneratedQuestion]] = field(default_factory=dict)
    # Every embedded question as a row, and the section each row belongs to.
    matrix: np.ndarray = field(default_factory=lambda: np.zeros((0, DIM), dtype=np.float32))
    sections: list[tuple[int, str]] = field(default_factory=list)


def _build(previous: QuestionIndex | None, key: Hashable) -> QuestionIndex:
    version = int(cast(tuple[int, str], key)[0])
    index = QuestionIndex(version=version)
    vectors: list[np.ndarray] = []
    rows = SectionQuestion.objects.filter(
        suppressed=False, document__status=Document.Status.READY
    ).values_list("document_id", "anchor", "text", "language", "role", "source", "embedding")
    for document_id, anchor, text, language, role, source, blob in rows.order_by("pk"):
        vector = np.frombuffer(bytes(blob), dtype="<f4") if blob else None
        if vector is not None and vector.shape != (DIM,):
            vector = None
        section = (document_id, anchor)
        index.by_section.setdefault(section, []).append(
            GeneratedQuestion(text, language, role, source, vector)
        )
        if vector is not None:
            vectors.append(vector)
            index.sections.append(section)
    if vectors:
        index.matrix = np.vstack(vectors).astype(np.float32)
    return index


_questions: VersionedCache[QuestionIndex] = VersionedCache(
    name="generated questions", source=KB_VERSION, build=_build
)


def question_index() -> QuestionIndex:
    """The active questions; blocks (database): never call on the event loop."""
    return _questions.get()


def questions_reset() -> None:
    _questions.reset()


def questions_for(chunk_ids: Sequence[int]) -> dict[int, list[GeneratedQuestion]]:
    """The active generated questions of each chunk's section, by chunk id (a section
    split into several chunks gives each of them the section's questions). A chunk
    whose section has none maps to []; an unknown chunk id is left out."""
    index = question_index()
    rows = Chunk.objects.filter(pk__in=list(chunk_ids)).values_list("pk", "document_id", "anchor")
    return {
        pk: list(index.by_section.get((document_id, section_anchor(anchor)), []))
        for pk, document_id, anchor in rows
    }


def section_similarity(question: str) -> dict[tuple[int, str], float]:
    """Each section's best cosine between ``question`` and one of its questions, by
    (document_id, section anchor): the multilingual embedder reads both languages, so
    an English question meets a Chinese section's questions too. {} when the embedder
    is off or no question is embedded (blocking: embeds)."""
    index = question_index()
    if not len(index.matrix) or not multilingual.available() or not question.strip():
        return {}
    sims = index.matrix @ multilingual.embed_query(question)
    best: dict[tuple[int, str], float] = {}
    for section, score in zip(index.sections, sims.tolist(), strict=True):
        if score > best.get(section, -1.0):
            best[section] = float(score)
    return best
