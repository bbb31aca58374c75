"""The router's statistical half at routing time: the trained intent classifier
(TF-IDF character n-grams + word n-grams, optionally the message's sentence embedding,
and logistic regression weights) and the message embedding it may need.

Character n-grams (``char_wb``, 1-4) need no segmenter, so Chinese works as well as
English, and they shrug off shoppers' typos ("cancle", "adress"). Predicting one
message is a sparse dot product, well under a millisecond, which is why this and
not a sentence-embedding model sits on the hot path. Training is in
routing/classifier_training.py, the stored model in routing/classifier_store.py.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any

import numpy as np
from sklearn.pipeline import FeatureUnion

from routing.encoder import adapter_apply
from routing.normalise import text_normalise
from routing.oos_score import OosScorer

_DIGITS_RE = re.compile(r"\d+")

# The embedding columns' weight beside the TF-IDF ones (see classifier_fit.C_EMBEDDINGS).
EMBEDDING_WEIGHT = 2.0


def features_text(normalised: str) -> str:
    """Digit runs become "0": order ids, zips and prices are slots, not intent cues,
    and one specific number must not tie an example to its intent."""
    return _DIGITS_RE.sub("0", normalised)


TfidfLookup = list[tuple[Callable[[str], list[str]], dict[str, int], np.ndarray, int]]


def tfidf_lookup(vectorizer: FeatureUnion) -> TfidfLookup:
    """(analyzer, vocabulary, idf, column offset) for each TF-IDF part of ``vectorizer``."""
    parts = []
    offset = 0
    for _, part in vectorizer.transformer_list:
        parts.append((part.build_analyzer(), part.vocabulary_, part.idf_, offset))
        offset += len(part.vocabulary_)
    return parts


def tfidf_dot(lookup: TfidfLookup, text: str, weights: np.ndarray) -> Any:
    """``vectorizer.transform([text]) @ weights`` (sublinear TF x IDF, L2 per part)
    without scikit-learn's per-call overhead; also the handoff scorer's."""
    total: Any = 0.0
    for analyzer, vocabulary, idf, offset in lookup:
        counts = Counter(i for t in analyzer(text) if (i := vocabulary.get(t)) is not None)
        if not counts:
            continue
        index = np.fromiter(counts.keys(), dtype=np.intp, count=len(counts))
        values = (1.0 + np.log(np.fromiter(counts.values(), dtype=np.float64))) * idf[index]
        values /= np.sqrt(values @ values)
        total = total + values @ weights[offset + index]
    return total


@dataclass(frozen=True)
class TrainedClassifier:
    intents: tuple[str, ...]
    vectorizer: FeatureUnion  # TF-IDF character n-grams + word uni/bigrams
    # Dense (n_features, n_intents): one sparse-by-dense product per message.
    weights: np.ndarray
    bias: np.ndarray
    sample_count: int
    train_seconds: float
    trained_at: datetime
    # Hash of the training samples: a rebuild with identical data reuses the model.
    data_hash: str
    # Rows of ``weights`` after the TF-IDF ones that multiply the message's sentence
    # embedding (x EMBEDDING_WEIGHT); 0 for a TF-IDF-only model.
    embedding_dim: int = 0
    # Scores are divided by it before the softmax (fitted on held-out examples), so
    # that a probability of 0.8 is right about 80% of the time.
    temperature: float = 1.0
    # The out-of-scope trade-off measured at training (see ``routing.calibration.oos_curve``).
    calibration: dict[str, Any] | None = None
    # With sentence embeddings: the training examples' embeddings (those that have one;
    # float16 rows, half the stored size, float32 once loaded) and the in-scope score's
    # weights (a, b, c), fitted on the calibration fold: sigmoid(a * log(top
    # probability) + b * cosine similarity to the nearest example + c). None: the
    # score is the top probability (see ``in_scope_score``).
    example_vectors: np.ndarray | None = None
    oos_weights: tuple[float, float, float] | None = None
    # With sentence embeddings: a TF-IDF-only model on the same features (weights,
    # bias, temperature) and the top probability at or above which its decision
    # stands without the message's embedding (chosen at training so that accuracy and
    # out-of-scope recall on the calibration fold do not drop). None: always embed.
    tfidf_weights: np.ndarray | None = None
    tfidf_bias: np.ndarray | None = None
    tfidf_temperature: float = 1.0
    embed_below: float | None = None
    # The embedding adapter (routing.encoder, TIERDESK_ROUTER_FINETUNE): the message's
    # embedding is adapted by it before the weights and the nearest example see it
    # (the example vectors are stored adapted). None: the shipped embedding as it is.
    adapter: np.ndarray | None = None
    # With sentence embeddings: the shop's out-of-scope score, calibrated at training
    # over leave-intents-out folds (routing.oos_calibration), and its thresholds. None:
    # ``in_scope_score`` and the configured threshold.
    oos_scorer: OosScorer | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_lookup", None)  # rebuilt after loading; closures don't pickle
        state.pop("_examples32", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        # Models stored before a field existed get its default.
        state.setdefault("embedding_dim", 0)
        state.setdefault("temperature", 1.0)
        state.setdefault("calibration", None)
        state.setdefault("example_vectors", None)
        state.setdefault("oos_weights", None)
        state.setdefault("tfidf_weights", None)
        state.setdefault("tfidf_bias", None)
        state.setdefault("tfidf_temperature", 1.0)
        state.setdefault("embed_below", None)
        state.setdefault("adapter", None)
        state.setdefault("oos_scorer", None)
        self.__dict__.update(state)

    @cached_property
    def _lookup(self) -> TfidfLookup:
        return tfidf_lookup(self.vectorizer)

    def scores(
        self, *, text: str, embedding: np.ndarray | None = None, tfidf_only: bool = False
    ) -> np.ndarray:
        """The linear scores, computed like ``vectorizer.transform`` (sublinear TF x
        IDF, L2-normalised per part) but without scikit-learn's per-call overhead:
        ~0.2 ms instead of ~2 ms for one short message. ``tfidf_only``: the TF-IDF-only
        model's (``tfidf_weights``), which needs no embedding."""
        weights, bias = self.weights, self.bias
        if tfidf_only:
            if self.tfidf_weights is None or self.tfidf_bias is None:
                raise ValueError("this classifier has no TF-IDF-only model")
            weights, bias = self.tfidf_weights, self.tfidf_bias
        scores = bias.copy()
        if self.embedding_dim and not tfidf_only:
            if embedding is None:
                raise ValueError("this classifier needs the message's sentence embedding")
            embedding = adapter_apply(self.adapter, embedding)
            scores += (EMBEDDING_WEIGHT * embedding) @ weights[-self.embedding_dim :]
        return scores + tfidf_dot(self._lookup, text, weights)

    def predict(self, *, text: str, embedding: np.ndarray | None = None) -> list[tuple[str, float]]:
        """(intent, probability) for every intent, most likely first. ``text`` is
        already normalised (``text_normalise``); ``embedding`` is the message's
        sentence embedding (``message_embedding``), needed when ``embedding_dim``."""
        scores = self.scores(text=features_text(text), embedding=embedding) / self.temperature
        return self._ranked(scores)

    def predict_without_embedding(self, *, text: str) -> list[tuple[str, float]] | None:
        """The TF-IDF-only model's (intent, probability) list when its top probability
        reaches ``embed_below`` (the message's embedding is then not needed), else
        None. Always None for a model without the cut."""
        if self.embed_below is None or self.tfidf_weights is None:
            return None
        scores = self.scores(text=features_text(text), tfidf_only=True)
        ranked = self._ranked(scores / self.tfidf_temperature)
        return ranked if ranked[0][1] >= self.embed_below else None

    def _ranked(self, scores: np.ndarray) -> list[tuple[str, float]]:
        scores = scores - scores.max()
        probs = np.exp(scores)
        probs /= probs.sum()
        order = np.argsort(-probs)
        return [(self.intents[i], float(probs[i])) for i in order]

    @cached_property
    def _examples32(self) -> np.ndarray:
        # numpy has no fast float16 product: convert once per loaded model.
        assert self.example_vectors is not None
        return np.ascontiguousarray(self.example_vectors, dtype=np.float32)

    def in_scope_score(self, *, top_probability: float, embedding: np.ndarray | None) -> float:
        """How sure the router may be that the message is one of the shop's intents and
        the top one is right: the number compared with the clarify threshold.

        The top probability alone lets through questions near an intent but not of it
        (the softmax only compares the shop's intents). A message far from every
        training example is out of scope however its probabilities fall, so with an
        embedding the score also weighs its similarity to the nearest example. On
        BANKING77's out-of-scope variant (threshold from the training data's folds,
        test queries never used): in-scope accuracy / out-of-scope recall 0.812 / 0.866
        with the top probability, 0.858 / 0.824 with this score (docs/routing.md).
        A message without an embedding (Chinese, see ``embedding_applies``) keeps the
        top probability."""
        if (
            self.oos_weights is None
            or self.example_vectors is None
            or embedding is None
            or not embedding.any()
        ):
            return top_probability
        a, b, c = self.oos_weights
        vector = adapter_apply(self.adapter, embedding.astype(np.float32))
        examples = self._examples32
        # In blocks of 1,024: OpenBLAS spreads one large matrix-vector product over its
        # threads, which on the busy 2-core machine took ~7 ms for BANKING77's 7,246
        # examples instead of ~0.2 ms.
        nearest = max(
            float(np.max(examples[start : start + 1024] @ vector))
            for start in range(0, len(examples), 1024)
        )
        return float(sigmoid(a * np.log(top_probability + 1e-12) + b * nearest + c))


def sigmoid(z: float | np.ndarray) -> Any:
    return 1.0 / (1.0 + np.exp(-np.asarray(z, dtype=np.float64)))


def embedding_applies(text: str) -> bool:
    """The MiniLM is an English model: a Chinese text's embedding is noise that pulled
    Chinese tier accuracy on heldout.tsv from 0.987 to 0.886. Chinese texts get a zero
    embedding (at training and per message), so the TF-IDF features alone decide them."""
    from knowledge.text import language_detect

    return language_detect(text_normalise(text)) == "en"


def message_embedding(text: str) -> np.ndarray:
    """The sentence embedding of a message, through knowledge.embedding's query cache:
    retrieval asks for the same text later in the turn and gets it for free."""
    from knowledge.embedding import dimension, embed_query

    if not embedding_applies(text):
        return np.zeros(dimension(), dtype=np.float32)
    return embed_query(text)
