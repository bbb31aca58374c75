"""What the answerability classifier reads about one (question, section) pair.

Every feature is one that carries to any shop: how close the question is to the
section and to the shopper-style questions written for it (the language's trusted
embedder), how far it leads the other sections, BM25, the share of the question's
words the section holds, and whether negation and numbers agree. None of them names
a word of a shop's domain, so a model fitted on one shop's labelled pairs reads
another shop's pairs on the same scale.

A section is ``(document id, anchor without "#n")``: its chunks are grouped and the
best chunk speaks for it. Blocking (embedding, numpy): a worker thread only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import embedding, multilingual
from .coverage import character_share, question_coverage
from .index import IndexSnapshot, get_snapshot
from .numerals import quantities
from .retrieval import Passage, dense_trusted
from .section_questions import section_similarity
from .terms import NEG_EN, NEG_ZH

SectionKey = tuple[int, str]

FEATURES = (
    "sim",
    "sim_lead",
    "sim_top",
    "gq_sim",
    "gq_lead",
    "has_gq",
    "bm25_rel",
    "bm25_log",
    "kw_cov",
    "q_cov",
    "q_cov_answers",
    "own_cov",
    "char_share",
    "q_neg",
    "neg_agree",
    "q_num",
    "num_found",
    "is_lead",
    "retrieved_rank",
    "zh",
    "zh_sim",
    "zh_gq_sim",
)


def section_key(passage: Passage) -> SectionKey:
    return (passage.document_id, passage.anchor.split("#", 1)[0])


@dataclass
class Candidate:
    """One section a question may be about: its chunks among the retrieved passages
    (best first), and where it ranked."""

    key: SectionKey
    passages: list[Passage]
    rank: int

    @property
    def best(self) -> Passage:
        return self.passages[0]

    @property
    def text(self) -> str:
        return " ".join(p.text for p in self.passages)


def candidates_of(passages: list[Passage]) -> list[Candidate]:
    """The retrieved passages grouped into sections, in rank order."""
    out: dict[SectionKey, Candidate] = {}
    for passage in passages:
        key = section_key(passage)
        if key in out:
            out[key].passages.append(passage)
        else:
            out[key] = Candidate(key=key, passages=[passage], rank=len(out))
    return list(out.values())


def _best_by_section(keys: list[SectionKey], scores: np.ndarray) -> dict[SectionKey, float]:
    best: dict[SectionKey, float] = {}
    for key, score in zip(keys, scores.tolist(), strict=True):
        if score > best.get(key, -1.0):
            best[key] = float(score)
    return best


def section_similarities(
    question: str, language: str, snap: IndexSnapshot
) -> dict[SectionKey, float]:
    """Per section of the question's language, its best chunk's cosine with the
    question (e5 where it reads the language, else MiniLM where it is trusted)."""
    seg = snap.segment(language) if snap.has_language(language) else None
    if seg is None:
        return {}
    if multilingual.enabled_for(language) and seg.ml_matrix is not None:
        matrix: Any = seg.ml_matrix.float().numpy()
        vector = multilingual.embed_query(question)
    elif dense_trusted(language):
        matrix = snap.matrix[seg.rows]
        vector = embedding.embed_query(question)
    else:
        return {}
    scores = np.asarray(matrix, dtype=np.float32) @ np.asarray(vector, dtype=np.float32)
    keys = []
    for row in seg.rows:
        meta = snap.nodes[int(row)].metadata
        keys.append((int(meta["document_id"]), str(meta["anchor"]).split("#", 1)[0]))
    return _best_by_section(keys, scores)


# -- one row per candidate ----------------------------------------------------------------------
def _negated(text: str) -> bool:
    return bool(NEG_EN.search(text) or NEG_ZH.search(text))


def _lead(scores: dict[SectionKey, float], key: SectionKey, own: float) -> float:
    others = [v for k, v in scores.items() if k != key]
    return own - (max(others) if others else 0.0)


QUESTION_FEATURES = ("gq_sim", "gq_lead", "has_gq", "zh_gq_sim")


def without_questions(rows: np.ndarray) -> np.ndarray:
    """The same pairs as if no section had generated questions yet (a shop whose
    cards are still being drafted): what the fit adds so the model reads that case."""
    out = rows.copy()
    for name in QUESTION_FEATURES:
        out[:, FEATURES.index(name)] = 0.0
    return out


def feature_rows(question: str, language: str, candidates: list[Candidate]) -> np.ndarray:
    """One row of ``FEATURES`` per candidate section (blocking)."""
    snap = get_snapshot()
    sims = section_similarities(question, language, snap)
    # The section's generated questions (written at ingestion, edited by admins) by
    # their multilingual vectors, whatever the section's language.
    gq = section_similarity(question)
    bm25_max = max((p.bm25 or 0.0 for c in candidates for p in c.passages), default=0.0)
    q_neg = _negated(question)
    q_numbers = quantities(question)
    zh = 1.0 if language == "zh" else 0.0
    rows: list[list[float]] = []
    for cand in candidates:
        best = cand.best
        material = " ".join(p.material for p in cand.passages)
        sim = sims.get(cand.key, max(p.similarity for p in cand.passages))
        # A section with no generated questions yet (its card not drafted) has zeros
        # and ``has_gq`` 0; the fit teaches the model that case (``without_questions``).
        gq_sim = gq.get(cand.key, 0.0)
        bm25 = max(p.bm25 or 0.0 for p in cand.passages)
        sim_lead = _lead(sims, cand.key, sim) if sims else 0.0
        coverage = question_coverage(question, [material])
        own = question_coverage(question, [cand.text]).share
        found = quantities(material)
        num_found = (
            sum(any(q.same(f) for f in found) for q in q_numbers) / len(q_numbers)
            if q_numbers
            else 1.0
        )
        values = {
            "sim": sim,
            "sim_lead": sim_lead,
            "sim_top": 1.0 if sims and sim >= max(sims.values()) else 0.0,
            "gq_sim": gq_sim,
            "gq_lead": _lead(gq, cand.key, gq_sim) if cand.key in gq else 0.0,
            "has_gq": 1.0 if cand.key in gq else 0.0,
            "bm25_rel": bm25 / bm25_max if bm25_max > 0 else 0.0,
            "bm25_log": math.log1p(bm25),
            "kw_cov": max(p.coverage for p in cand.passages),
            "q_cov": coverage.share,
            "q_cov_answers": 1.0 if coverage.answers else 0.0,
            "own_cov": own,
            "char_share": character_share(question, material),
            "q_neg": 1.0 if q_neg else 0.0,
            "neg_agree": 1.0 if q_neg == _negated(cand.text) else 0.0,
            "q_num": 1.0 if q_numbers else 0.0,
            "num_found": num_found,
            "is_lead": 1.0 if best.heading == best.title else 0.0,
            "retrieved_rank": 1.0 / (1.0 + cand.rank),
            "zh": zh,
            "zh_sim": zh * sim,
            "zh_gq_sim": zh * gq_sim,
        }
        rows.append([float(values[name]) for name in FEATURES])
    return np.asarray(rows, dtype=np.float64).reshape(len(rows), len(FEATURES))
