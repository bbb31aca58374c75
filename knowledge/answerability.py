"""Does a section answer the question, is it only about it, or is it unrelated?

A small calibrated classifier decides, not thresholds tuned by hand: multinomial
logistic regression over ``knowledge.answerability_features`` (standardised), its
logits divided by a temperature fitted on held-out folds, so that the probabilities
mean what they say. It is fitted by ``manage.py fit_answerability`` on labelled
pairs (the demo shop's seed sets by default, a shop's own labelled questions when it
imports them) and stored as JSON with a SHA-256 checksum.

The decision for a question, over the sections retrieval found:

- ``answers``: the section most likely to answer it, when "answers" is its most likely
  class. L2 then writes the answer from it, and the entailment guard still checks
  every sentence before it is shown.
- ``about``: else the section most likely to be about it, when "about" is its most
  likely class. L2 answers from it only if its coverage check confirms the section
  answers, else quotes it (``knowledge.pointing``), never as an answer.
- ``unrelated``: else nothing; L2 says it doesn't know.

The model is loaded once per file version (path, size, modification time), not per
knowledge-base version: editing an article changes the features, not the model. A
shop's refit (``TIERDESK_KB_ANSWERABILITY_PATH``) is used when present, else the seed
model. Blocking (features embed): a worker thread only.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings

from .answerability_features import FEATURES, Candidate, candidates_of, feature_rows

logger = logging.getLogger(__name__)

CLASSES = ("answers", "about", "unrelated")
FORMAT = 1
SEED_PATH = Path(__file__).resolve().parent / "seed_data" / "answerability.json"


class ModelError(ValueError):
    """The stored model can't be used: unreadable, tampered with, or for other features."""


@dataclass(frozen=True)
class Model:
    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray  # (classes, features)
    intercept: np.ndarray  # (classes,)
    temperature: float
    checksum: str
    meta: dict[str, Any] = field(default_factory=dict)

    def probabilities(self, rows: np.ndarray) -> np.ndarray:
        """Calibrated class probabilities, one row per feature row (``CLASSES`` order)."""
        if rows.shape[1] != len(self.features):
            raise ModelError(f"expected {len(self.features)} features, got {rows.shape[1]}")
        z = ((rows - self.mean) / self.scale) @ self.coef.T + self.intercept
        z = z / self.temperature
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return np.asarray(e / e.sum(axis=1, keepdims=True))


def checksum_of(payload: dict[str, Any]) -> str:
    """SHA-256 of the artifact's canonical JSON, its own checksum left out."""
    body = {k: v for k, v in payload.items() if k != "checksum"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def model_from(payload: dict[str, Any]) -> Model:
    """The model an artifact describes, checked (format, checksum, feature names)."""
    if payload.get("format") != FORMAT:
        raise ModelError(f"unknown answerability model format {payload.get('format')!r}")
    if payload.get("checksum") != checksum_of(payload):
        raise ModelError("answerability model checksum mismatch")
    if tuple(payload["features"]) != FEATURES:
        raise ModelError("answerability model was fitted on other features; refit it")
    if tuple(payload["classes"]) != CLASSES:
        raise ModelError("answerability model has other classes; refit it")
    return Model(
        features=tuple(payload["features"]),
        mean=np.asarray(payload["mean"], dtype=np.float64),
        scale=np.asarray(payload["scale"], dtype=np.float64),
        coef=np.asarray(payload["coef"], dtype=np.float64),
        intercept=np.asarray(payload["intercept"], dtype=np.float64),
        temperature=float(payload["temperature"]),
        checksum=str(payload["checksum"]),
        meta=dict(payload.get("meta", {})),
    )


def model_path() -> Path:
    """The shop's refit when there is one, else the seed model."""
    own = Path(settings.TIERDESK_KB_ANSWERABILITY_PATH)
    return own if own.is_file() else SEED_PATH


_lock = threading.Lock()
_loaded: tuple[tuple[str, int, int], Model] | None = None


def model_load() -> Model:
    """The current model, read again only when its file changes (blocking: file I/O)."""
    global _loaded
    path = model_path()
    stat = path.stat()
    stamp = (str(path), stat.st_size, stat.st_mtime_ns)
    with _lock:
        if _loaded is None or _loaded[0] != stamp:
            try:
                payload = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as exc:
                raise ModelError(f"answerability model {path} unreadable: {exc}") from exc
            _loaded = (stamp, model_from(payload))
            logger.info("answerability model %s loaded (%s)", path, _loaded[1].checksum[:12])
        return _loaded[1]


def model_reset() -> None:
    global _loaded
    with _lock:
        _loaded = None


@dataclass
class Decision:
    label: str  # one of CLASSES
    candidate: Candidate | None
    # Per candidate section: its key and class probabilities (the reply's metadata).
    scored: list[dict[str, Any]] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        return {"label": self.label, "sections": self.scored}


def decide(question: str, language: str, candidates: list[Candidate]) -> Decision:
    """The classifier's verdict over the candidate sections (blocking)."""
    if not candidates:
        return Decision(label="unrelated", candidate=None)
    model = model_load()
    probs = model.probabilities(feature_rows(question, language, candidates))
    scored = [
        {
            "document_id": c.key[0],
            "anchor": c.key[1],
            **{name: round(float(p), 3) for name, p in zip(CLASSES, row, strict=True)},
        }
        for c, row in zip(candidates, probs, strict=True)
    ]
    winners = probs.argmax(axis=1)
    for label in ("answers", "about"):
        k = CLASSES.index(label)
        eligible = [i for i in range(len(candidates)) if winners[i] == k]
        if eligible:
            best = max(eligible, key=lambda i: probs[i, k])
            return Decision(label=label, candidate=candidates[best], scored=scored)
    return Decision(label="unrelated", candidate=None, scored=scored)


def decide_for(question: str, language: str) -> Decision:
    """Retrieve the candidate sections, then decide (blocking)."""
    from .retrieval import passages_retrieve

    result = passages_retrieve(
        question=question, language=language, top_k=settings.TIERDESK_KB_ANSWERABILITY_CANDIDATES
    )
    return decide(question, language, candidates_of(result.passages))
