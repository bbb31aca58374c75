"""The out-of-scope score at routing time: one calibrated number from the classifier's
top probability and margin and, in the view of the embedder that reads the message's
language, the similarity to the nearest training example and to the top intent's
centroid.

Two views: MiniLM (the classifier's own embedder, English) and the multilingual e5
(``knowledge.multilingual``) for the other languages, where MiniLM's vector is noise
and the classifier has only its TF-IDF features. Each view has its own weights: e5's
similarities sit higher than MiniLM's for any two texts. The weights and the threshold
are fitted per shop at retraining (``routing.oos_calibration``), from the shop's own
examples with some intents left out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

# The views' names: which embedder reads the message.
MINILM, E5 = "minilm", "e5"
SIGNALS = (
    "log_top_probability",
    "margin",
    "unknown_words",
    "unknown_chinese_pairs",
    "nearest_example",
    "nearest_of_top_intent",
    "top_intent_centroid",
    "neighbours_agree",
)
# Neighbours that vote for the top intent (``neighbours_agree``).
NEIGHBOURS = 5
_WORD_RE = re.compile(r"[a-z]{3,}")
_HAN_PAIR_RE = re.compile(r"(?=([\u4e00-\u9fff]{2}))")


def text_units(text: str) -> tuple[list[str], list[str]]:
    """A normalised text's Latin words of three letters or more and its pairs of Chinese
    characters: what the shop's vocabulary is made of."""
    return _WORD_RE.findall(text), _HAN_PAIR_RE.findall(text)


@dataclass(frozen=True)
class Vocabulary:
    """The words and Chinese character pairs of the shop's examples. A question about
    something none of them mentions (another shop's name, a vaccine) has words they
    never used, however close its phrasing is to an intent's."""

    words: frozenset[str]
    pairs: frozenset[str]

    @classmethod
    def of(cls, normalised_texts: list[str]) -> Vocabulary:
        words: set[str] = set()
        pairs: set[str] = set()
        for text in normalised_texts:
            w, p = text_units(text)
            words.update(w)
            pairs.update(p)
        return cls(frozenset(words), frozenset(pairs))

    def unknown(self, normalised: str) -> tuple[float, float]:
        """The shares of the text's words and of its Chinese pairs the shop never used."""
        words, pairs = text_units(normalised)
        return (
            sum(w not in self.words for w in words) / len(words) if words else 0.0,
            sum(p not in self.pairs for p in pairs) / len(pairs) if pairs else 0.0,
        )


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.asarray(matrix / np.where(norms > 0, norms, 1.0), dtype=np.float32)


def centroids_of(vectors: np.ndarray, labels: np.ndarray, count: int) -> np.ndarray:
    """Each intent's mean example (unit length; a zero row for an intent without
    examples in this view)."""
    out = np.zeros((count, vectors.shape[1]), dtype=np.float32)
    for label in np.unique(labels):
        out[int(label)] = vectors[labels == label].mean(0)
    return unit_rows(out)


def similarity_signals(
    *,
    queries: np.ndarray,
    top_labels: np.ndarray,
    examples: np.ndarray,
    labels: np.ndarray,
    centroids: np.ndarray,
) -> np.ndarray:
    """(nearest example, nearest example of the top intent, the top intent's centroid,
    the share of the NEIGHBOURS nearest examples that are of the top intent), one row
    per query, in blocks of queries."""
    out = np.zeros((len(queries), 4))
    if not len(examples):
        return out
    k = min(NEIGHBOURS, len(examples))
    for start in range(0, len(queries), 256):
        q = queries[start : start + 256]
        top = top_labels[start : start + 256]
        sims = q @ examples.T
        own = np.where(labels[None, :] == top[:, None], sims, -1.0)
        near = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        out[start : start + len(q)] = np.column_stack(
            [
                sims.max(1),
                own.max(1),
                np.einsum("ij,ij->i", q, centroids[top]),
                (labels[near] == top[:, None]).mean(1),
            ]
        )
    return out


@dataclass(frozen=True)
class ScoreView:
    """One embedder's view of the shop's examples and the score's weights in it."""

    examples: np.ndarray  # float16 unit rows (float32 once loaded)
    labels: np.ndarray  # each example's intent (column)
    centroids: np.ndarray  # (intents, dim), float32 unit rows
    weights: tuple[float, ...]  # one per SIGNALS
    bias: float

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_examples32", None)
        return state

    @cached_property
    def _examples32(self) -> np.ndarray:
        return np.ascontiguousarray(self.examples, dtype=np.float32)

    def score(self, signals: np.ndarray, *, column: int, vector: np.ndarray) -> float:
        """``signals``: the classifier's and the vocabulary's (the first four SIGNALS)."""
        similar = similarity_signals(
            queries=np.asarray(vector, dtype=np.float32)[None, :],
            top_labels=np.array([column]),
            examples=self._examples32,
            labels=self.labels,
            centroids=self.centroids,
        )[0]
        x = np.concatenate([signals, similar])
        return float(1.0 / (1.0 + np.exp(-(x @ np.array(self.weights) + self.bias))))


@dataclass(frozen=True)
class OosScorer:
    """The shop's calibrated in-scope score and the thresholds chosen on it."""

    intents: tuple[str, ...]
    views: dict[str, ScoreView]
    # Below it: out of scope, the clarifying question (the curve's suggested point).
    threshold: float
    # An intent that starts an order flow needs at least this (never below
    # ``threshold``): an unsure guess at an order intent asks rather than asking
    # "which order?".
    order_threshold: float
    vocabulary: Vocabulary
    column: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.column:
            object.__setattr__(self, "column", {n: i for i, n in enumerate(self.intents)})

    def score(
        self,
        *,
        ranked: list[tuple[str, float]],
        normalised: str,
        view: str,
        vector: np.ndarray | None,
    ) -> float | None:
        """The in-scope score of a message the classifier ranked so, or None when the
        view is missing (no vector: the caller keeps the top probability)."""
        scored = self.views.get(view)
        if scored is None or vector is None or not vector.any() or not ranked:
            return None
        intent, top = ranked[0]
        column = self.column.get(intent)
        if column is None:
            return None
        second = ranked[1][1] if len(ranked) > 1 else 0.0
        words, pairs = self.vocabulary.unknown(normalised)
        signals = np.array([np.log(top + 1e-12), top - second, words, pairs])
        return scored.score(signals, column=column, vector=vector)

    def threshold_for(self, intent: str, order_intents: tuple[str, ...]) -> float:
        return self.order_threshold if intent in order_intents else self.threshold
