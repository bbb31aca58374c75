"""Fitting the answerability classifier (``knowledge.answerability``) from labelled
questions.

A labelled question is a JSON line: ``question``, ``lang`` (en, zh), ``kind`` (fact or
trap: a section answers it; unanswerable: none does) and, for an answerable one,
``doc`` (the article's seed key or its title) and ``section`` (the section's heading).
Optional ``split`` lets one file hold rows that must not be fitted on.

Each question becomes pairs with the sections retrieval finds for it (the ones the
classifier will see when a shopper asks): the labelled section ``answers``; another
section of the same article is ``about`` it; every other section, and every section
found for an unanswerable question, is ``unrelated``. Blocking (retrieval, embedding).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings

from .answerability import CLASSES, FORMAT, checksum_of
from .answerability_features import (
    FEATURES,
    Candidate,
    SectionKey,
    candidates_of,
    feature_rows,
    without_questions,
)

KINDS = {"fact", "trap", "unanswerable"}
LANGUAGES = {"en", "zh"}
# Retrieval depth when looking for a labelled section the classifier's own candidates
# missed: it still teaches what an answering section looks like.
SEARCH_DEPTH = 10


class LabelledDataError(ValueError):
    """A labelled questions file the fit can't use; the message says where and why."""


@dataclass(frozen=True)
class Labelled:
    question: str
    language: str
    kind: str
    doc: str
    section: str
    split: str

    @property
    def answerable(self) -> bool:
        return self.kind != "unanswerable"


def labelled_parse(text: str, *, source: str, splits: set[str] | None = None) -> list[Labelled]:
    """The rows of a labelled questions file (JSON lines), checked; ``splits`` keeps
    only rows whose ``split`` is one of them."""
    out: list[Labelled] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{source}, line {number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise LabelledDataError(f"{where}: not JSON ({exc.msg})") from exc
        if not isinstance(row, dict):
            raise LabelledDataError(f"{where}: expected an object")
        question = str(row.get("question") or "").strip()
        language = str(row.get("lang") or "")
        kind = str(row.get("kind") or "")
        if not question:
            raise LabelledDataError(f"{where}: no question")
        if language not in LANGUAGES:
            raise LabelledDataError(f"{where}: lang must be one of {sorted(LANGUAGES)}")
        if kind not in KINDS:
            raise LabelledDataError(f"{where}: kind must be one of {sorted(KINDS)}")
        doc, section = str(row.get("doc") or ""), str(row.get("section") or "")
        if kind != "unanswerable" and not (doc and section):
            raise LabelledDataError(f"{where}: an answerable question needs doc and section")
        split = str(row.get("split") or "")
        if splits is not None and split not in splits:
            continue
        out.append(Labelled(question, language, kind, doc, section, split))
    if not out:
        raise LabelledDataError(f"{source}: no labelled questions")
    return out


def labelled_load(path: Path, *, splits: set[str] | None = None) -> list[Labelled]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise LabelledDataError(f"{path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise LabelledDataError(f"{path}: not UTF-8 text") from exc
    return labelled_parse(text, source=str(path), splits=splits)


def section_index() -> dict[tuple[str, str], SectionKey]:
    """(article key or title, section heading) -> section, for the knowledge base now."""
    from .index import get_snapshot
    from .models import Document

    names: dict[int, set[str]] = {}
    for pk, key, title in Document.objects.values_list("pk", "seed_key", "title"):
        names[pk] = {n for n in (key, title) if n}
    out: dict[tuple[str, str], SectionKey] = {}
    for node in get_snapshot().nodes:
        meta = node.metadata
        doc_id = int(meta["document_id"])
        heading = str(meta.get("heading", "")).split(" > ")[-1]
        for name in names.get(doc_id, ()):
            out[(name, heading)] = (doc_id, str(meta["anchor"]).split("#", 1)[0])
    return out


@dataclass
class Pairs:
    rows: np.ndarray
    labels: np.ndarray  # index into CLASSES
    groups: np.ndarray  # which question each pair came from
    report: dict[str, Any] = field(default_factory=dict)


def _label(row: Labelled, gold: SectionKey | None, cand: Candidate) -> int:
    if gold is None:
        return CLASSES.index("unrelated")
    if cand.key == gold:
        return CLASSES.index("answers")
    if cand.key[0] == gold[0]:
        return CLASSES.index("about")
    return CLASSES.index("unrelated")


def question_candidates(row: Labelled, gold: SectionKey | None) -> list[Candidate]:
    """The sections the classifier sees for the question, plus the labelled one when
    retrieval found it only deeper."""
    from .retrieval import passages_retrieve

    k = settings.TIERDESK_KB_ANSWERABILITY_CANDIDATES
    result = passages_retrieve(question=row.question, language=row.language, top_k=SEARCH_DEPTH)
    deep = candidates_of(result.passages)
    shown = candidates_of(result.passages[:k])
    if gold is not None and all(c.key != gold for c in shown):
        shown += [c for c in deep if c.key == gold]
    return shown


def pairs_build(rows: list[Labelled]) -> Pairs:
    """Feature rows and labels for every (question, candidate section) pair. A row
    whose article or section the knowledge base doesn't hold is an error."""
    sections = section_index()
    missing = sorted({(r.doc, r.section) for r in rows if r.answerable} - set(sections))
    if missing:
        shown = ", ".join(f"{d} / {s}" for d, s in missing[:5])
        raise LabelledDataError(
            f"{len(missing)} labelled sections are not in the knowledge base: {shown}"
        )
    feats: list[np.ndarray] = []
    labels: list[int] = []
    groups: list[int] = []
    unfound = 0
    for number, row in enumerate(rows):
        gold = sections[(row.doc, row.section)] if row.answerable else None
        cands = question_candidates(row, gold)
        if gold is not None and all(c.key != gold for c in cands):
            unfound += 1
        if not cands:
            continue
        feats.append(feature_rows(row.question, row.language, cands))
        labels.extend(_label(row, gold, c) for c in cands)
        groups.extend([number] * len(cands))
    counts = Counter(CLASSES[i] for i in labels)
    return Pairs(
        rows=np.vstack(feats) if feats else np.zeros((0, len(FEATURES))),
        labels=np.asarray(labels, dtype=int),
        groups=np.asarray(groups, dtype=int),
        report={
            "questions": len(rows),
            "pairs": len(labels),
            "per_class": {c: counts.get(c, 0) for c in CLASSES},
            "labelled_section_not_retrieved": unfound,
        },
    )


# -- fitting ------------------------------------------------------------------------------------
def _logits(model: Any, rows: np.ndarray) -> np.ndarray:
    return np.asarray(model.decision_function(rows))


def _temperature(logits: np.ndarray, labels: np.ndarray) -> float:
    """The temperature that minimises the held-out log loss (a grid: one number)."""
    best, best_loss = 1.0, float("inf")
    for t in np.linspace(0.3, 5.0, 95):
        z = logits / t
        z = z - z.max(axis=1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        loss = -float(logp[np.arange(len(labels)), labels].mean())
        if loss < best_loss:
            best, best_loss = float(t), loss
    return best


def per_class(labels: np.ndarray, predicted: np.ndarray) -> dict[str, dict[str, float | int]]:
    """Precision, recall and support per class."""
    out: dict[str, dict[str, float | int]] = {}
    for k, name in enumerate(CLASSES):
        tp = int(((predicted == k) & (labels == k)).sum())
        said = int((predicted == k).sum())
        real = int((labels == k).sum())
        out[name] = {
            "precision": round(tp / said, 3) if said else 0.0,
            "recall": round(tp / real, 3) if real else 0.0,
            "support": real,
        }
    return out


def fit(pairs: Pairs, *, source: str, folds: int = 5) -> dict[str, Any]:
    """The artifact (JSON-ready, checksummed) for these pairs: standardised multinomial
    logistic regression, temperature fitted on out-of-fold logits."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold

    present = set(pairs.labels.tolist())
    if present != set(range(len(CLASSES))):
        absent = [CLASSES[k] for k in range(len(CLASSES)) if k not in present]
        raise LabelledDataError(f"no pairs labelled {', '.join(absent)}: add such questions")
    # Every pair twice: as it is, and as if its sections had no generated questions yet.
    rows = np.vstack([pairs.rows, without_questions(pairs.rows)])
    labels = np.concatenate([pairs.labels, pairs.labels])
    groups = np.concatenate([pairs.groups, pairs.groups])
    mean = rows.mean(axis=0)
    scale = rows.std(axis=0)
    scale[scale < 1e-9] = 1.0
    x = (rows - mean) / scale

    def model() -> Any:
        return LogisticRegression(C=1.0, max_iter=2000)

    oof = np.zeros((len(x), len(CLASSES)))
    splits = min(folds, len(set(groups.tolist())))
    for train, held in GroupKFold(n_splits=splits).split(x, labels, groups):
        part = model().fit(x[train], labels[train])
        logits = np.full((len(held), len(CLASSES)), -1e6)
        logits[:, part.classes_] = _logits(part, x[held])
        oof[held] = logits
    temperature = _temperature(oof, labels)
    final = model().fit(x, labels)
    payload: dict[str, Any] = {
        "format": FORMAT,
        "features": list(FEATURES),
        "classes": list(CLASSES),
        "mean": mean.round(6).tolist(),
        "scale": scale.round(6).tolist(),
        "coef": final.coef_.round(6).tolist(),
        "intercept": final.intercept_.round(6).tolist(),
        "temperature": round(temperature, 4),
        "meta": {
            "source": source,
            **pairs.report,
            "cross_validated": per_class(
                labels[: len(pairs.labels)], oof[: len(pairs.labels)].argmax(axis=1)
            ),
        },
    }
    payload["checksum"] = checksum_of(payload)
    return payload


def artifact_write(payload: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)
