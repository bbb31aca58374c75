"""Answer cards: drafted at ingestion, reviewed by support admins, served by L2.

``cards_sync(document_id)`` (Celery, after every ingestion) gives each section of the
article one card: question phrasings and a short answer.

- The phrasings come from the section's heading and, with ``TIERDESK_KB_CARD_ROLE``
  set, from a model asked how shoppers would ask; a phrasing must be about the
  section (most of its words are the section's), or it is dropped.
- The answer is the model's short answer if every sentence of it is entailed by the
  section (``knowledge.entail``), else the section's own opening sentences: a card
  says nothing the article doesn't.
- A section whose text changed sends its card back to review (``stale``), keeping the
  old text and answer for the diff in admin; a removed section's card is deleted.

``card_match`` finds the served card for a question: the best phrasing by cosine
(languages whose embeddings are trusted), by shared words (all languages) or by the
section's generated questions (multilingual, ``knowledge.section_questions``), above
the thresholds in settings.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from inference.versioned import VersionedCache

from . import entail, ingest
from . import text as ktext
from .article_links import article_url
from .card_questions import heading_question, shopper_question
from .coverage import question_coverage
from .index import KB_VERSION
from .models import AnswerCard, Document
from .question_type import is_yes_no

logger = logging.getLogger(__name__)

_QUESTION_PROMPT = {
    "en": (
        "Here is a section of a shop's help article.\n\n{heading}\n{text}\n\n"
        "Write three different questions a shopper might type that this section answers, "
        "one per line, each ending with a question mark. Then a line starting with "
        '"Answer:" that answers them in one or two short sentences using only the section.'
    ),
    "zh": (
        "下面是网店帮助文章的一段。\n\n{heading}\n{text}\n\n"
        "写出顾客可能会问、而这段文字能回答的三个不同问题，每行一个，以问号结尾。"
        "然后写一行以“回答：”开头、只根据这段文字用一两句话作答。"
    ),
}
_ANSWER_LINE = re.compile(r"^\s*(?:answer|回答)\s*[:：]\s*(.+)$", re.IGNORECASE)
_LIST_PREFIX = re.compile(r"^\s*(?:\d+[.)、]|[-*•])\s*")


def section_hash(section: ingest.Section) -> str:
    return hashlib.sha256(f"{section.heading}\n{section.text}".encode()).hexdigest()


def extract_answer(section: ingest.Section, *, max_chars: int) -> str:
    """The section's opening sentences up to ``max_chars``: entailed by construction."""
    out: list[str] = []
    size = 0
    for sentence in entail.sentences(" ".join(section.text.split())):
        sentence = re.sub(r"^#+\s*", "", sentence)
        if out and size + len(sentence) > max_chars:
            break
        out.append(sentence)
        size += len(sentence)
    joiner = "" if ktext.has_cjk(" ".join(out)) else " "
    return joiner.join(out)


@dataclass
class Draft:
    questions: list[str]
    answer: str
    drafted_by: str
    verdict: dict[str, Any] = field(default_factory=dict)


def _model_output(prompt: str, role: str) -> tuple[str, str]:
    from inference.base import ChatMessage, GenerationRequest
    from inference.registry import get_backend

    backend = get_backend(role)
    if getattr(backend, "chat", True):
        request = GenerationRequest(
            messages=(ChatMessage("user", prompt),), max_tokens=160, temperature=0.2, seed=5
        )
    else:
        request = GenerationRequest(prompt=prompt, max_tokens=160, temperature=0.2, seed=5)
    complete = getattr(backend, "complete", None)
    if complete is not None:
        raw, _usage = complete(request)
    else:
        raw = "".join(chunk.text for chunk in backend.stream(request))
    return raw, backend.model_id


def draft(section: ingest.Section, *, language: str, role: str) -> Draft:
    """One card for one section (blocking: may call a model)."""
    max_chars = settings.TIERDESK_KB_CARD_ANSWER_CHARS
    extract = extract_answer(section, max_chars=max_chars)
    questions = [q for q in [heading_question(section)] if q]
    answer, by = extract, "extractive"
    if role:
        from inference.base import InferenceError

        lang = language if language in _QUESTION_PROMPT else "en"
        prompt = _QUESTION_PROMPT[lang].format(heading=section.heading, text=section.text)
        try:
            raw, model_id = _model_output(prompt, role)
        except InferenceError as exc:
            logger.warning("card drafting model failed: %s; extractive card", exc)
            raw, model_id = "", ""
        for line in raw.splitlines():
            line = _LIST_PREFIX.sub("", line).strip()
            found = _ANSWER_LINE.match(line)
            if found:
                candidate = found.group(1).strip()
                if candidate and entail.text_check(candidate, [section.text]).entailed:
                    answer, by = candidate, f"model:{model_id}"
                continue
            known = {q.lower() for q in questions}
            if (
                line.endswith(("?", "？"))
                and shopper_question(line, section)
                and line.lower() not in known
            ):
                questions.append(line)
        if model_id and by == "extractive":
            by = f"extractive (model:{model_id} wrote the phrasings)"
    if not questions:
        # A section without a heading: its first sentence stands for the question.
        questions = [extract[:120]]
    return Draft(
        questions=questions[:4],
        answer=answer,
        drafted_by=by,
        verdict=verdict_of(answer, section.text),
    )


def verdict_of(answer: str, section_text: str) -> dict[str, Any]:
    """The entailment check's verdict on a card's answer, as stored on the card."""
    check = entail.text_check(answer, [section_text])
    return {
        "entailed": check.entailed,
        "claims": [{"text": c.text, "label": c.label, "reason": c.reason} for c in check.claims],
    }


def answer_text(heading: str, answer: str) -> str:
    """What the card's answer vector embeds: a question is often closer to the answer
    it wants than to the heading someone wrote for it."""
    return f"{heading.split(' > ')[-1]} {answer}".strip()


def _embed(questions: list[str], *, heading: str, answer: str) -> bytes:
    """One row per phrasing, then one for the heading and answer (the last row)."""
    from . import embedding

    vectors = embedding.embed_texts([*questions, answer_text(heading, answer)])
    return np.ascontiguousarray(vectors, dtype="<f4").tobytes()


# An article's opening lines before its first subsection ("Questions about our Hiking
# Boots.") answer nothing: no card, up to this many characters.
INTRODUCTION_CHARS = 160


def is_introduction(section: ingest.Section, following: list[ingest.Section]) -> bool:
    """A short section that only introduces the subsections under its heading."""
    if len(section.text.strip()) > INTRODUCTION_CHARS or not following:
        return False
    return following[0].heading.startswith(f"{section.heading} > ")


def cards_sync(*, document_id: int) -> dict[str, int]:
    """Bring a document's cards in line with its ingested sections (idempotent: an
    unchanged section keeps its card and its review)."""
    from .services import document_bytes, kb_version_bump

    document = Document.objects.filter(pk=document_id, status=Document.Status.READY).first()
    counts = {"created": 0, "stale": 0, "kept": 0, "deleted": 0}
    if document is None:
        return counts
    sections = [
        s
        for s in ingest.document_sections(
            data=document_bytes(document), source_format=document.source_format
        )
        if s.text.strip()
    ]
    sections = [s for i, s in enumerate(sections) if not is_introduction(s, sections[i + 1 :])]
    role = settings.TIERDESK_KB_CARD_ROLE
    existing = {c.anchor: c for c in AnswerCard.objects.filter(document_id=document_id)}
    drafts: dict[str, tuple[ingest.Section, str, Draft]] = {}
    for section in sections:
        digest = section_hash(section)
        card = existing.get(section.anchor)
        if card is not None and card.section_hash == digest:
            counts["kept"] += 1
            continue
        drafts[section.anchor] = (
            section,
            digest,
            draft(section, language=document.language, role=role),
        )
    touched_served = False
    with transaction.atomic():
        live = {s.anchor for s in sections}
        gone = [c.pk for a, c in existing.items() if a not in live]
        touched_served |= AnswerCard.objects.filter(
            pk__in=gone, status=AnswerCard.Status.APPROVED
        ).exists()
        counts["deleted"] = AnswerCard.objects.filter(pk__in=gone).delete()[0]
        for anchor, (section, digest, d) in drafts.items():
            card = existing.get(anchor)
            vector = _embed(d.questions, heading=section.heading, answer=d.answer)
            if card is None:
                AnswerCard.objects.create(
                    document=document,
                    language=document.language,
                    anchor=anchor,
                    heading=section.heading,
                    section_text=section.text,
                    section_hash=digest,
                    questions=d.questions,
                    answer=d.answer,
                    drafted_by=d.drafted_by,
                    verdict=d.verdict,
                    embedding=vector,
                )
                counts["created"] += 1
                continue
            was_reviewed = card.status in (AnswerCard.Status.APPROVED, AnswerCard.Status.STALE)
            touched_served |= card.status == AnswerCard.Status.APPROVED
            card.previous_section_text = card.section_text
            card.previous_answer = card.answer
            card.section_text = section.text
            card.section_hash = digest
            card.heading = section.heading
            card.questions = d.questions
            card.answer = d.answer
            card.drafted_by = d.drafted_by
            card.verdict = d.verdict
            card.embedding = vector
            card.status = AnswerCard.Status.STALE if was_reviewed else AnswerCard.Status.DRAFT
            card.reviewed_by = None
            card.reviewed_at = None
            card.save()
            counts["stale"] += 1
        if touched_served or (drafts and settings.TIERDESK_KB_SERVE_DRAFTS):
            kb_version_bump()  # a served card changed: caches and indexes move on
    logger.info("cards of document %s: %s", document_id, counts)
    return counts


class CardError(ValueError):
    pass


def card_review(*, card_ids: list[int], status: str, user_id: int | None) -> int:
    """Approve, reject or send back cards. Approving a card whose answer the check
    does not back is refused: the answer must say only what the article says."""
    if status not in AnswerCard.Status.values:
        raise CardError(f"unknown status {status!r}")
    with transaction.atomic():
        cards = list(AnswerCard.objects.select_for_update().filter(pk__in=card_ids))
        if status == AnswerCard.Status.APPROVED:
            bad = [c for c in cards if not c.entailed]
            if bad:
                raise CardError(
                    "not approved: the answer of "
                    + ", ".join(f"“{c}”" for c in bad[:3])
                    + " says something its section doesn't; edit it first"
                )
        now = timezone.now()
        changed = AnswerCard.objects.filter(pk__in=[c.pk for c in cards]).update(
            status=status,
            reviewed_by_id=user_id if status != AnswerCard.Status.DRAFT else None,
            reviewed_at=now if status != AnswerCard.Status.DRAFT else None,
            updated_at=now,
        )
        from .services import kb_version_bump

        kb_version_bump()
    return changed


def card_edit(*, card: AnswerCard, questions: list[str], answer: str) -> AnswerCard:
    """An admin's edit: re-checked and re-embedded; an approved card stays approved
    only if the new answer is still backed by its section."""
    questions = [q.strip() for q in questions if q.strip()]
    if not questions:
        raise CardError("a card needs at least one question")
    card.questions = questions
    card.answer = answer.strip()
    card.verdict = verdict_of(card.answer, card.section_text)
    card.embedding = _embed(questions, heading=card.heading, answer=card.answer)
    if card.status == AnswerCard.Status.APPROVED and not card.entailed:
        card.status = AnswerCard.Status.DRAFT
    card.save()
    from .services import kb_version_bump

    kb_version_bump()
    return card


# -- serving -----------------------------------------------------------------------------------
@dataclass
class CardRow:
    """One searchable row: a phrasing of a card, or the card's heading and answer
    (``kind == "answer"``)."""

    card_id: int
    document_id: int
    title: str
    anchor: str
    heading: str
    language: str
    answer: str
    question: str
    kind: str  # "question" | "answer"
    tokens: frozenset[str]
    bigrams: frozenset[str]
    snippet: str
    # The heading's own character pairs ("忘记用户名"), Chinese only.
    heading_bigrams: frozenset[str] = frozenset()
    # Everything the card says: its heading, phrasings, answer and section.
    material: str = ""


def _cjk_bigrams(text: str) -> frozenset[str]:
    run = "".join(ch for ch in text if ktext.has_cjk(ch))
    return frozenset(run[i : i + 2] for i in range(len(run) - 1))


def _cjk_chars(text: str) -> frozenset[str]:
    return frozenset(ch for ch in text if ktext.has_cjk(ch))


def _content_bigrams(text: str) -> frozenset[str]:
    """The character pairs of what a Chinese question (or a card's heading) is about:
    pairs within runs of its content words, not of how it is asked (怎么办, 可以, 吗).
    "密码忘了怎么办" shared 怎么 and 么办 with the heading "缺货怎么办" and got the
    out-of-stock card; its one content pair, 密码, is the password card's."""
    out: set[str] = set()
    for run in ktext.zh_content_runs(text):
        # A one-character word stands for itself: "登山靴有13码吗" is about 码 (sizes),
        # which told the boots' sizes card from their material card.
        if len(run) == 1:
            out.add(run)
        out.update(run[i : i + 2] for i in range(len(run) - 1))
    return frozenset(out)


@dataclass
class CardIndex:
    version: int
    rows: list[CardRow] = field(default_factory=list)
    matrix: np.ndarray = field(default_factory=lambda: np.zeros((0, 384), dtype=np.float32))


def _build(previous: CardIndex | None, key: Hashable) -> CardIndex:
    version = int(cast(tuple[int, str], key)[0])
    statuses = [AnswerCard.Status.APPROVED]
    if settings.TIERDESK_KB_SERVE_DRAFTS:
        statuses.append(AnswerCard.Status.DRAFT)
    rows: list[CardRow] = []
    vectors: list[np.ndarray] = []
    cards = AnswerCard.objects.filter(
        status__in=statuses, document__status=Document.Status.READY
    ).select_related("document")
    for card in cards:
        if not card.entailed or not card.embedding:
            continue
        texts = [*card.questions, answer_text(card.heading, card.answer)]
        matrix = np.frombuffer(bytes(card.embedding), dtype="<f4").reshape(-1, 384)
        if len(matrix) != len(texts):
            # Embedded before cards had an answer row: its phrasings still match.
            texts = texts[: len(matrix)]
        whole = " ".join(texts)
        material = " ".join([card.heading, *card.questions, card.answer, card.section_text])
        for i, text in enumerate(texts):
            kind = "question" if i < len(card.questions) else "answer"
            rows.append(
                CardRow(
                    card_id=card.pk,
                    document_id=card.document_id,
                    title=card.document.title,
                    anchor=card.anchor,
                    heading=card.heading,
                    language=card.language,
                    answer=card.answer,
                    question=text,
                    kind=kind,
                    tokens=frozenset(ktext.index_tokens(text)),
                    # Chinese is matched on the whole card's character pairs.
                    bigrams=_cjk_bigrams(whole) | _cjk_chars(whole)
                    if kind == "answer"
                    else frozenset(),
                    snippet=" ".join(card.section_text.split())[:220],
                    heading_bigrams=_content_bigrams(card.heading.split(" > ")[-1])
                    if kind == "answer"
                    else frozenset(),
                    material=material,
                )
            )
            vectors.append(matrix[i])
    matrix = np.vstack(vectors).astype(np.float32) if vectors else np.zeros((0, 384), np.float32)
    return CardIndex(version=version, rows=rows, matrix=matrix)


# Rebuilt when the knowledge-base version moves: every card review and every
# ingestion bumps it (the one refresh scheme, inference/versioned.py).
_cards: VersionedCache[CardIndex] = VersionedCache(
    name="answer cards", source=KB_VERSION, build=_build
)


def card_index() -> CardIndex:
    """The served cards; blocks (database): never call on the event loop."""
    return _cards.get()


def cards_reset() -> None:
    _cards.reset()


@dataclass
class CardMatch:
    row: CardRow
    score: float
    # "dense-question" | "dense-answer" | "words" | "characters" | "generated-question"
    how: str

    def citation(self) -> dict[str, Any]:
        title = self.row.heading.split(" > ")[-1] if self.row.heading else self.row.title
        # The same shape as a retrieved passage's citation (knowledge.retrieval).
        return {
            "document_id": self.row.document_id,
            "title": self.row.title,
            "heading": title,
            "anchor": self.row.anchor,
            "url": article_url(self.row.document_id, self.row.anchor),
            "snippet": self.row.snippet,
            "card_id": self.row.card_id,
            "score": round(self.score, 4),
        }


# Chinese: how much the card's own heading counts beside the whole card's character
# pairs. The whole card shares 订单 and 取消 with many answers ("怎么取消订单" found
# the refund-timing card, which mentions cancelled orders); its heading ("取消订单")
# names what it is about. Tuned on the dev split (docs/knowledge.md).
ZH_HEADING_WEIGHT = 0.3


def zh_card_score(pairs: frozenset[str], row: CardRow) -> float:
    """The share of the question's character pairs in the card, blended with the
    share of the card heading's pairs in the question."""
    card = len(pairs & row.bigrams) / len(pairs)
    if not row.heading_bigrams:
        return card
    heading = len(row.heading_bigrams & pairs) / len(row.heading_bigrams)
    return (1 - ZH_HEADING_WEIGHT) * card + ZH_HEADING_WEIGHT * heading


def card_covers(question: str, row: CardRow) -> bool:
    """The card holds what the question is about: L2's coverage rule for passages
    (``coverage.question_coverage``), on everything the card says, numbers left out."""
    coverage = question_coverage(question, [row.material], numbers=False)
    return coverage.answers


def card_match(
    *, question: str, language: str, query_vector: np.ndarray | None = None
) -> CardMatch | None:
    """The card to serve for ``question``, or None (blocking: may embed).

    Thresholds (tuned on the dev split of bench/sets/answers/demo, docs/knowledge.md):
    a phrasing by cosine (``TIERDESK_KB_CARD_MIN_SIMILARITY``) or the heading+answer
    by cosine (``TIERDESK_KB_CARD_MIN_ANSWER_SIMILARITY``) where the embedder is
    trusted; shared words with a phrasing (Jaccard, ``TIERDESK_KB_CARD_MIN_OVERLAP``);
    for Chinese, the share of the question's character pairs found in the card,
    blended with how much of the card's heading the question names
    (``zh_card_score``, ``TIERDESK_KB_CARD_MIN_ZH_COVERAGE``)."""
    index = card_index()
    rows = [i for i, r in enumerate(index.rows) if r.language == language]
    if not rows:
        return None
    candidates: list[CardMatch] = []
    if language in settings.TIERDESK_KB_DENSE_LANGUAGES:
        if query_vector is None:
            from . import embedding

            query_vector = embedding.embed_query(question)
        sims = index.matrix[rows] @ np.asarray(query_vector, dtype=np.float32)
        for kind, floor in (
            ("question", settings.TIERDESK_KB_CARD_MIN_SIMILARITY),
            ("answer", settings.TIERDESK_KB_CARD_MIN_ANSWER_SIMILARITY),
        ):
            picked = [(float(sims[j]), i) for j, i in enumerate(rows) if index.rows[i].kind == kind]
            if picked:
                score, i = max(picked)
                if score >= floor:
                    # By how far it clears its own bar, so the two kinds compare.
                    candidates.append(CardMatch(index.rows[i], score, f"dense-{kind}"))
    words = set(ktext.index_tokens(question))
    if words:
        for i in rows:
            row = index.rows[i]
            if row.kind != "question" or not row.tokens:
                continue
            score = len(words & row.tokens) / len(words | row.tokens)
            if score >= settings.TIERDESK_KB_CARD_MIN_OVERLAP:
                candidates.append(CardMatch(row, score, "words"))
    candidates += _generated_matches(question, [index.rows[i] for i in rows])
    pairs = _content_bigrams(question)
    if pairs:
        for i in rows:
            row = index.rows[i]
            if row.kind != "answer" or not row.bigrams:
                continue
            score = zh_card_score(pairs, row)
            if score >= settings.TIERDESK_KB_CARD_MIN_ZH_COVERAGE:
                candidates.append(CardMatch(row, score, "characters"))
    if is_yes_no(question):
        # A yes/no question asks whether one thing holds: a card that leaves out what
        # it is about can't say yes or no to it ("can I pause my premium subscription
        # for a month?" matched the card on cancelling it). Numbers don't count: a
        # trap's wrong figure is what the card's answer corrects.
        candidates = [m for m in candidates if card_covers(question, m.row)]
    if not candidates:
        return None
    floors = {
        "dense-question": settings.TIERDESK_KB_CARD_MIN_SIMILARITY,
        "dense-answer": settings.TIERDESK_KB_CARD_MIN_ANSWER_SIMILARITY,
        "words": settings.TIERDESK_KB_CARD_MIN_OVERLAP,
        "characters": settings.TIERDESK_KB_CARD_MIN_ZH_COVERAGE,
        "generated-question": settings.TIERDESK_KB_CARD_MIN_QUESTIONS_SIMILARITY,
    }
    return max(candidates, key=lambda m: m.score - floors[m.how])


def _generated_matches(question: str, rows: list[CardRow]) -> list[CardMatch]:
    """The served card whose section's generated questions (``knowledge.section_questions``,
    multilingual, both languages) come closest to the question, if close enough."""
    from .section_questions import section_similarity

    sims = section_similarity(question)
    if not sims:
        return []
    best: CardMatch | None = None
    for row in rows:
        if row.kind != "answer":
            continue
        score = sims.get((row.document_id, row.anchor))
        if score is not None and (best is None or score > best.score):
            best = CardMatch(row, score, "generated-question")
    floor = settings.TIERDESK_KB_CARD_MIN_QUESTIONS_SIMILARITY
    return [best] if best is not None and best.score >= floor else []
