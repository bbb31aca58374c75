"""The router's statistical half: TF-IDF character n-grams (+ word n-grams) and
logistic regression.

Character n-grams (``char_wb``, 1-4) need no segmenter, so Chinese works as well as
English, and they shrug off shoppers' typos ("cancle", "adress"). Predicting one
message is a sparse dot product, well under a millisecond, which is why this and
not a sentence-embedding model sits on the hot path.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import re
import threading
import time
import zlib
from collections import Counter, OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import sklearn
from django.conf import settings
from django.utils import timezone
from scipy import sparse
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import FeatureUnion

from inference.versioned import BuildPending, VersionedCache
from routing.encoder import adapter_apply, adapter_fit
from routing.models import ClassifierModel, Utterance
from routing.normalise import text_normalise
from routing.types import OUT_OF_SCOPE
from routing.versioning import ROUTER_VERSION

logger = logging.getLogger(__name__)

_DIGITS_RE = re.compile(r"\d+")

# Weak regularisation: with ~100 examples per intent a strongly regularised model
# spreads its probability so thin that typical messages fall under the clarify
# threshold (0.45) and get a needless question. Tier accuracy in 4-fold CV on the
# seed utterances (rules included): C=20 about 0.81, C=300 0.875, C=1000 0.88.
_C = 1000.0
# With sentence embeddings beside the TF-IDF features (TIERDESK_ROUTER_EMBEDDINGS).
# Chosen on BANKING77 (the development benchmark, never on heldout.tsv), top-1 with 10
# examples per intent / all: embedding columns x 2 and C=30: 0.854 / 0.941 (C=100:
# 0.849 / 0.936; C=10: 0.853; weight 1.5: 0.845-0.847, 2.5: 0.844-0.850, 3: 0.838-0.848
# over C 30-300; TF-IDF alone 0.708 / 0.913).
_C_EMBEDDINGS = 30.0
_EMBEDDING_WEIGHT = 2.0
# Share of each intent's examples held out to calibrate the probabilities and to
# measure the out-of-scope trade-off (then the model is trained on all of them).
_CALIBRATION_SHARE = 0.2
# Share of the shop's intents left out of the calibration model altogether: their
# examples stand in for the questions a shop's intents don't cover (near its domain,
# unlike generic off-topic text). On BANKING77's out-of-scope variant, a threshold
# chosen with off-topic text alone caught 0.62 of the unseen intents' queries; chosen
# on two such folds of the training data, 0.89 (docs/routing.md, "Out of scope").
_UNSEEN_INTENT_SHARE = 0.25


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
    # embedding (x _EMBEDDING_WEIGHT); 0 for a TF-IDF-only model.
    embedding_dim: int = 0
    # Scores are divided by it before the softmax (fitted on held-out examples), so
    # that a probability of 0.8 is right about 80% of the time.
    temperature: float = 1.0
    # The out-of-scope trade-off measured at training (see ``oos_curve``).
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
            scores += (_EMBEDDING_WEIGHT * embedding) @ weights[-self.embedding_dim :]
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
        return float(_sigmoid(a * np.log(top_probability + 1e-12) + b * nearest + c))


def _sigmoid(z: float | np.ndarray) -> Any:
    return 1.0 / (1.0 + np.exp(-np.asarray(z, dtype=np.float64)))


def _nearest_similarity(queries: np.ndarray, examples: np.ndarray) -> np.ndarray:
    """Each query's cosine similarity to its nearest example (unit vectors), in chunks
    so that a large training set never needs one queries x examples matrix."""
    if not len(examples):
        return np.zeros(len(queries))
    out = np.empty(len(queries))
    for start in range(0, len(queries), 512):
        out[start : start + 512] = (queries[start : start + 512] @ examples.T).max(1)
    return out


def _oos_weights_fit(
    *, held: np.ndarray, correct: np.ndarray, negatives: np.ndarray
) -> tuple[float, float, float] | None:
    """The in-scope score's weights: logistic regression on (log top probability,
    nearest-example similarity) of the held-out examples (1 when the top intent is
    right) and of the negatives (0: unseen intents' examples and off-topic text).
    Tried beside these on BANKING77's training folds and left out, as they added
    nothing there: the similarity to the top intent's centroid, the top-two margin, a
    Mahalanobis distance, the mean of the 5 nearest."""
    x = np.vstack([held, negatives])
    target = np.concatenate([correct.astype(int), np.zeros(len(negatives), dtype=int)])
    if len(np.unique(target)) < 2:
        return None
    model = LogisticRegression(C=1.0, class_weight="balanced", max_iter=1000)
    model.fit(x, target)
    a, b = (float(w) for w in model.coef_[0])
    return a, b, float(model.intercept_[0])


def classifier_samples() -> list[tuple[str, str]]:
    """(text, intent) for every utterance of an enabled intent, both languages."""
    rows = (
        Utterance.objects.filter(intent__enabled=True)
        .order_by("intent__name", "language", "text")
        .values_list("text", "intent__name")
    )
    return [(text, intent) for text, intent in rows]


def classifier_samples_hash(
    samples: Sequence[tuple[str, str]],
    *,
    embeddings: bool | None = None,
    finetune: bool | None = None,
) -> str:
    """The stored model's key: the examples, and whether it uses sentence embeddings
    and the embedding adapter (switching TIERDESK_ROUTER_EMBEDDINGS or _FINETUNE must
    not load the other kind)."""
    if embeddings is None:
        embeddings = bool(settings.TIERDESK_ROUTER_EMBEDDINGS)
    if finetune is None:
        finetune = bool(settings.TIERDESK_ROUTER_FINETUNE)
    digest = hashlib.sha256(b"embeddings\x1e" if embeddings else b"")
    if embeddings and finetune:
        digest.update(b"adapter\x1e")
    for text, intent in samples:
        digest.update(f"{intent}\x1f{text}\x1e".encode())
    return digest.hexdigest()


def _vectorizer() -> FeatureUnion:
    return FeatureUnion(
        [
            (
                "chars",
                TfidfVectorizer(
                    analyzer="char_wb",
                    ngram_range=(1, 4),
                    sublinear_tf=True,
                    lowercase=False,  # text_normalise already case-folded
                    dtype=np.float64,
                ),
            ),
            # Whole words and word pairs ("ship internationally", "kill the order")
            # on top of the characters. 4-fold CV on the training utterances: English
            # tier accuracy 0.899 -> 0.916, Chinese 0.892 -> 0.882 (a CJK run without
            # spaces is one "word", so Chinese gains nothing); see docs/routing.md.
            (
                "words",
                TfidfVectorizer(
                    analyzer="word",
                    ngram_range=(1, 2),
                    sublinear_tf=True,
                    lowercase=False,
                    token_pattern=r"(?u)\b\w+\b",
                    dtype=np.float64,
                ),
            ),
        ]
    )


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


# Example texts -> their sentence embedding, kept across retrains in this process (the
# Celery worker): adding one example re-embeds one text, not the shop's thousands.
# 50k vectors of 384 float32 are about 77 MB at most.
_EXAMPLE_CACHE_SIZE = 50_000
_example_vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_example_lock = threading.Lock()


def examples_embed(
    texts: list[str],
    report: Callable[[str, float], None] | None = None,
    share: tuple[float, float] = (0.0, 1.0),
) -> np.ndarray:
    """Sentence embeddings of example texts (one row each), embedding only the texts
    this process has not embedded before."""
    from knowledge.embedding import dimension, embed_texts, model_path

    model = model_path()
    keys = [(model, t.strip()) for t in texts]
    zero = np.zeros(dimension(), dtype=np.float32)
    with _example_lock:
        for key in dict.fromkeys(keys):
            if key not in _example_vectors and not embedding_applies(key[1]):
                _example_vectors[key] = zero  # see embedding_applies
        missing = list(dict.fromkeys(k for k in keys if k not in _example_vectors))
    if missing:
        on_disk = _disk_cache_read(model, [text for _, text in missing])
        if on_disk:
            examples_cache_fill(list(on_disk.items()))
            missing = [k for k in missing if k[1] not in on_disk]
    embedded: list[tuple[str, np.ndarray]] = []
    batch = 256
    for start in range(0, len(missing), batch):
        if report is not None:
            low, high = share
            report(
                f"embedding examples {start}/{len(missing)}",
                low + (high - low) * start / len(missing),
            )
        chunk = missing[start : start + batch]
        vectors = embed_texts([text for _, text in chunk])
        embedded.extend((text, vector) for (_, text), vector in zip(chunk, vectors, strict=True))
        with _example_lock:
            for key, vector in zip(chunk, vectors, strict=True):
                _example_vectors[key] = vector
            while len(_example_vectors) > _EXAMPLE_CACHE_SIZE:
                _example_vectors.popitem(last=False)
    if embedded:
        _disk_cache_add(model, embedded)
    with _example_lock:
        rows = []
        for key in keys:
            vector = _example_vectors.get(key)
            if vector is None:  # evicted meanwhile (more texts than the cache holds)
                vector = embed_texts([key[1]])[0] if embedding_applies(key[1]) else zero
            rows.append(vector)
    return np.vstack(rows) if rows else np.zeros((0, len(zero)), dtype=np.float32)


# The example embeddings on disk too (var/cache), keyed by the model and a hash of the
# text: a new worker process (a deploy, a restart) retrains without embedding the
# shop's examples again. With the seed data, the embedding was ~50 of the ~70 s a
# first training took on a loaded 2-core machine (bench/results/router.json).
_disk_lock = threading.Lock()


def _disk_cache_path(model: str) -> Path:
    name = hashlib.sha256(model.encode()).hexdigest()[:16]
    return Path(settings.VAR_DIR) / "cache" / f"router-example-embeddings-{name}.npz"


def _text_key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _disk_cache_load(path: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as data:
            return dict(zip(data["keys"].tolist(), data["vectors"], strict=True))
    except FileNotFoundError:
        return {}
    except Exception:
        # Only a cache: a damaged file costs the embedding time, nothing else.
        logger.warning("unreadable example-embedding cache %s; ignored", path, exc_info=True)
        return {}


def _disk_cache_read(model: str, texts: list[str]) -> dict[str, np.ndarray]:
    """text -> embedding for the texts the disk cache has."""
    with _disk_lock:
        stored = _disk_cache_load(_disk_cache_path(model))
    found = {}
    for text in texts:
        vector = stored.get(_text_key(text))
        if vector is not None:
            found[text] = vector
    return found


def _disk_cache_add(model: str, pairs: list[tuple[str, np.ndarray]]) -> None:
    """Add embeddings to the disk cache (written whole to a temporary file and
    renamed, so a reader never sees half a file; at most _EXAMPLE_CACHE_SIZE rows,
    the newest kept)."""
    path = _disk_cache_path(model)
    try:
        with _disk_lock:
            stored = _disk_cache_load(path)
            for text, vector in pairs:
                stored.pop(_text_key(text), None)
                stored[_text_key(text)] = np.asarray(vector, dtype=np.float32)
            keys = list(stored)[-_EXAMPLE_CACHE_SIZE:]
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npz")
            np.savez(partial, keys=np.array(keys), vectors=np.vstack([stored[k] for k in keys]))
            os.replace(partial, path)
    except OSError:
        logger.warning("could not write the example-embedding cache %s", path, exc_info=True)


def examples_cache_fill(pairs: list[tuple[str, np.ndarray]]) -> None:
    """Put known (text, embedding) pairs in the example cache (an evaluation's saved
    embeddings of the same model)."""
    from knowledge.embedding import model_path

    model = model_path()
    with _example_lock:
        for text, vector in pairs:
            _example_vectors[(model, text.strip())] = np.asarray(vector, dtype=np.float32)
        while len(_example_vectors) > _EXAMPLE_CACHE_SIZE:
            _example_vectors.popitem(last=False)


def _fit(
    texts: list[str], y: np.ndarray, vectors: np.ndarray | None
) -> tuple[FeatureUnion, LogisticRegression, Any]:
    """(vectorizer, model, the examples' TF-IDF features)."""
    vectorizer = _vectorizer()
    tfidf = vectorizer.fit_transform([features_text(text_normalise(t)) for t in texts])
    if vectors is None:
        model = _tfidf_fit(tfidf, y)
    else:
        x = sparse.hstack([tfidf, sparse.csr_matrix(_EMBEDDING_WEIGHT * vectors)]).tocsr()
        model = LogisticRegression(C=_C_EMBEDDINGS, max_iter=3000, class_weight="balanced")
        model.fit(x, y)
    return vectorizer, model, tfidf


def _tfidf_fit(x: Any, y: np.ndarray) -> LogisticRegression:
    # class_weight: a busy intent with many examples must not drown a small one.
    # newton-cg: same optimum as the default lbfgs, ~5x faster on this weakly
    # regularised problem (1.3 s vs 7 s for ~1100 utterances on 2 cores).
    model = LogisticRegression(C=_C, max_iter=3000, class_weight="balanced", solver="newton-cg")
    model.fit(x, y)
    return model


def _weights_of(model: LogisticRegression) -> tuple[np.ndarray, np.ndarray]:
    """(features x intents weights, bias) of a fitted model; two intents as two
    columns (see _two_columns)."""
    coef, intercept = model.coef_, model.intercept_.copy()
    if coef.shape[0] == 1:
        coef = np.vstack([np.zeros_like(coef), coef])
        intercept = np.array([0.0, intercept[0]])
    return np.ascontiguousarray(coef.T), intercept


# Candidate cuts for answering from the TF-IDF-only model without the embedding, and
# the fewest held-out examples (with an embedding) the choice is made on.
_EMBED_BELOW_GRID = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.97, 0.98, 0.99, 0.995, 0.999)
_EMBED_BELOW_MIN_HELD = 50


def _embed_below_choose(
    *,
    points: list[tuple[float, np.ndarray, np.ndarray]],
    correct: np.ndarray,
    held_embedded: np.ndarray,
    negative_embedded: np.ndarray,
    negative_caught: np.ndarray,
    tfidf_held: np.ndarray,
    tfidf_negatives: np.ndarray,
    held_columns: np.ndarray,
    oos_column: int | None,
) -> float | None:
    """The lowest cut at which answering from the TF-IDF-only model when its top
    probability reaches it (and the threshold), embedding only the rest, loses no
    held-out example the combined model gets right, and neither in-scope accuracy nor
    out-of-scope recall on the calibration fold's messages that
    have an embedding, at every operating point in ``points``: (threshold, held-out
    examples' scores, negatives' scores). ``correct``: the
    combined model's top intent is right; ``tfidf_*``: the TF-IDF-only model's
    probabilities of the same rows."""
    if held_embedded.sum() < _EMBED_BELOW_MIN_HELD:
        return None  # too few examples to tell: always embed
    tfidf_caught = np.zeros(len(negative_caught), dtype=bool)
    if oos_column is not None and len(tfidf_negatives):
        tfidf_caught = tfidf_negatives.argmax(1) == oos_column
    tfidf_right = tfidf_held.argmax(1) == held_columns
    tfidf_held_top = tfidf_held.max(1)
    tfidf_negative_top = (
        tfidf_negatives.max(1) if len(tfidf_negatives) else np.zeros(len(negative_caught))
    )

    def shares(
        bar: float | None, threshold: float, held: np.ndarray, negative: np.ndarray
    ) -> tuple[float, float]:
        answered = correct & (held >= threshold)
        rejected = (negative < threshold) | negative_caught
        if bar is not None:
            answered = np.where(held_embedded & (tfidf_held_top >= bar), tfidf_right, answered)
            fast = negative_embedded & (tfidf_negative_top >= bar)
            rejected = np.where(fast, tfidf_caught, rejected)
        recall = float(np.mean(rejected[negative_embedded])) if negative_embedded.any() else 1.0
        return float(np.mean(answered[held_embedded])), recall

    for cut in _EMBED_BELOW_GRID:
        # Not one held-out example the combined model gets right may be lost (gains
        # elsewhere don't buy losses: on BANKING77's 10-shot fold, with 2 held-out
        # examples an intent, trading them let routed accuracy fall 0.834 -> 0.823).
        lost = held_embedded & (tfidf_held_top >= cut) & correct & ~tfidf_right
        if not lost.any() and all(
            np.less_equal(shares(None, t, h, n), shares(max(cut, t), t, h, n)).all()
            for t, h, n in points
        ):
            return cut
    return None


def _two_columns(scores: np.ndarray) -> np.ndarray:
    """Two intents: scikit-learn keeps one score per row (for the second); as scores
    [0, s] the softmax gives the same probabilities as its sigmoid, so every caller
    treats it like the multi-class case."""
    if scores.ndim == 2:
        return scores
    return np.column_stack([np.zeros_like(scores), scores])


def _calibration_split(
    y: np.ndarray, *, keep: Sequence[int] = (), seed: int = 17
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(train, held-out, unseen) indices. About _UNSEEN_INTENT_SHARE of the intents
    (never one in ``keep``, and only with four intents or more) are left out of
    training: their examples are the unseen part. Of every other intent about
    _CALIBRATION_SHARE of the examples are held out, at least one kept for training."""
    rng = np.random.default_rng(seed)
    labels = [int(label) for label in np.unique(y)]
    candidates = [label for label in labels if label not in set(keep)]
    unseen_count = round(len(labels) * _UNSEEN_INTENT_SHARE) if len(labels) >= 4 else 0
    unseen_labels = set(
        rng.permutation(candidates)[: min(unseen_count, max(len(candidates) - 2, 0))].tolist()
    )
    held: list[int] = []
    for label in labels:
        if label in unseen_labels:
            continue
        members = rng.permutation(np.flatnonzero(y == label))
        take = round(len(members) * _CALIBRATION_SHARE)
        held.extend(members[: min(take, len(members) - 1)])
    held_mask = np.zeros(len(y), dtype=bool)
    held_mask[np.array(held, dtype=np.intp)] = True
    unseen_mask = np.isin(y, list(unseen_labels))
    return (
        np.flatnonzero(~held_mask & ~unseen_mask),
        np.flatnonzero(held_mask),
        np.flatnonzero(unseen_mask),
    )


def _softmax(scores: np.ndarray, temperature: float) -> np.ndarray:
    z = scores / temperature
    z -= z.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    return p


def _temperature_fit(scores: np.ndarray, y: np.ndarray) -> float:
    """The temperature minimising the held-out negative log-likelihood (a 1-d grid:
    temperature scaling, Guo et al. 2017)."""
    grid = np.exp(np.linspace(np.log(0.05), np.log(20.0), 120))
    losses = [-np.mean(np.log(_softmax(scores, t)[np.arange(len(y)), y] + 1e-12)) for t in grid]
    return float(grid[int(np.argmin(losses))])


def oos_curve(
    *,
    in_scope: np.ndarray,
    correct: np.ndarray,
    off_topic: np.ndarray,
    off_topic_caught: np.ndarray | None = None,
) -> list[dict[str, float]]:
    """The out-of-scope trade-off at each threshold on the top probability: the share
    of in-scope messages still answered with the right intent, and the share of
    off-topic messages that fall under the threshold (asked to clarify) or that the
    shop's own out-of-scope intent catches (``off_topic_caught``)."""
    if off_topic_caught is None:
        off_topic_caught = np.zeros(len(off_topic), dtype=bool)
    curve = []
    # A 0.025 step: the in-scope score (not only a top probability) moves its best
    # point between the 0.05 steps of the first curve.
    for threshold in np.round(np.arange(0.025, 0.99, 0.025), 3):
        curve.append(
            {
                "threshold": float(threshold),
                "in_scope_accuracy": round(float(np.mean(correct & (in_scope >= threshold))), 4)
                if len(in_scope)
                else 0.0,
                "oos_recall": round(float(np.mean((off_topic < threshold) | off_topic_caught)), 4)
                if len(off_topic)
                else 0.0,
            }
        )
    return curve


def oos_threshold_suggest(curve: list[dict[str, float]]) -> float:
    """The most balanced point of the curve: the highest of the smaller of in-scope
    accuracy and out-of-scope recall; ties go to the lower threshold (fewer needless
    questions). On BANKING77's dev folds it beat the most accuracy plus recall
    (Youden's J), which gave up in-scope accuracy for recall."""
    best = max(
        curve,
        key=lambda p: (min(p["in_scope_accuracy"], p["oos_recall"]), -p["threshold"]),
    )
    return float(best["threshold"])


def off_topic_texts() -> list[str]:
    """Generic off-topic messages (seed_data/offtopic.txt): the negatives the
    out-of-scope trade-off is measured on, whatever the shop's intents are."""
    # The file sits beside the seed data; read here, not through routing.seed, which
    # imports the evaluation and through it the router (an import cycle).
    path = Path(__file__).resolve().parent / "seed_data" / "offtopic.txt"
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def classifier_train(
    *,
    samples: Sequence[tuple[str, str]] | None = None,
    progress: Callable[[str, float], None] | None = None,
    embeddings: bool | None = None,
    calibrate: bool = True,
    finetune: bool | None = None,
) -> TrainedClassifier:
    """Train on ``samples`` (text, intent), by default every enabled intent's utterances.

    ``embeddings`` (default: TIERDESK_ROUTER_EMBEDDINGS) adds the sentence embeddings
    beside the TF-IDF features. ``calibrate``: first train on 80% of each intent's
    examples to fit the temperature and measure the out-of-scope trade-off on the
    rest and on generic off-topic text, then train on everything.
    ``finetune`` (default: TIERDESK_ROUTER_FINETUNE; only with embeddings): the
    embeddings are adapted to these examples first (routing.encoder): by an adapter
    trained on the calibration fold's training part for the calibration (its held-out
    examples and left-out intents must stay unseen, as a shopper's message is), and by
    one trained on every example for the model.
    ``progress(stage, share)`` is told how far training got (the admin shows it).
    Raises ValueError when fewer than two intents have examples: there is nothing
    to decide between.
    """

    def report(stage: str, share: float) -> None:
        if progress is not None:
            progress(stage, share)

    if samples is None:
        samples = classifier_samples()
    if embeddings is None:
        embeddings = bool(settings.TIERDESK_ROUTER_EMBEDDINGS)
    if finetune is None:
        finetune = bool(settings.TIERDESK_ROUTER_FINETUNE)
    finetune = finetune and embeddings
    intents = sorted({intent for _, intent in samples})
    if len(intents) < 2:
        raise ValueError("the classifier needs example utterances for at least two intents")
    started = time.perf_counter()
    texts = [text for text, _ in samples]
    index = {name: i for i, name in enumerate(intents)}
    y = np.array([index[intent] for _, intent in samples])
    off_topic = off_topic_texts() if calibrate else []
    vectors = off_vectors = shipped = None
    if embeddings:
        vectors = examples_embed(texts + off_topic, report, (0.0, 0.5))
        vectors, off_vectors = vectors[: len(texts)], vectors[len(texts) :]
        shipped = vectors

    temperature, calibration = 1.0, None
    oos_weights: tuple[float, float, float] | None = None
    embed_below: float | None = None
    tfidf_temperature, embedded_share = 1.0, 1.0
    keep = [index[OUT_OF_SCOPE]] if OUT_OF_SCOPE in index else []
    train_part, held_part, unseen_part = _calibration_split(y, keep=keep)
    seen = np.unique(y[train_part])
    if finetune and calibrate and vectors is not None and off_vectors is not None:
        # The calibration fold's adapter, trained on its training part only.
        report("adapting the embeddings to the calibration fold", 0.5)
        fold_adapter = adapter_fit(vectors[train_part], y[train_part])
        vectors = adapter_apply(fold_adapter, vectors)
        off_vectors = adapter_apply(fold_adapter, off_vectors)
    if calibrate and len(held_part) and len(seen) >= 2:
        report(
            f"calibrating on {len(held_part)} held-out examples and "
            f"{len(unseen_part)} of {len(intents) - len(seen)} intents left out",
            0.5,
        )
        vectorizer, model, fold_tfidf = _fit(
            [texts[i] for i in train_part],
            y[train_part],
            None if vectors is None else vectors[train_part],
        )
        # The model's columns are the seen intents (model.classes_).
        column = {int(label): i for i, label in enumerate(model.classes_)}

        def decision(rows: list[str], rows_vectors: np.ndarray | None) -> np.ndarray:
            if not rows:
                return np.zeros((0, len(column)))
            x = vectorizer.transform([features_text(text_normalise(t)) for t in rows])
            if rows_vectors is not None:
                x = sparse.hstack([x, sparse.csr_matrix(_EMBEDDING_WEIGHT * rows_vectors)]).tocsr()
            return _two_columns(np.asarray(model.decision_function(x)))

        def rows_of(part: np.ndarray) -> tuple[list[str], np.ndarray | None]:
            return [texts[i] for i in part], None if vectors is None else vectors[part]

        held_scores = decision(*rows_of(held_part))
        held_columns = np.array([column[int(label)] for label in y[held_part]])
        temperature = _temperature_fit(held_scores, held_columns)
        held_probs = _softmax(held_scores, temperature)
        oos_column = column.get(index[OUT_OF_SCOPE]) if OUT_OF_SCOPE in index else None
        negatives = {
            "unseen_intents": _softmax(decision(*rows_of(unseen_part)), temperature),
            "off_topic": _softmax(decision(off_topic, off_vectors), temperature)
            if off_topic
            else np.zeros((0, len(column))),
        }
        pooled = np.vstack(list(negatives.values()))
        correct = held_probs.argmax(1) == held_columns
        held_score, pooled_score = held_probs.max(1), pooled.max(1)
        if vectors is not None:
            # The in-scope score (TrainedClassifier.in_scope_score), fitted on this
            # fold: similarity to the nearest of the fold's training examples.
            reference = vectors[train_part]
            reference = reference[reference.any(1)]
            held_vectors = vectors[held_part]
            pooled_vectors = np.vstack(
                [vectors[unseen_part], off_vectors if off_vectors is not None else vectors[:0]]
            )

            def features(top: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
                embedded = np.asarray(rows.any(1), dtype=bool)
                nearest = _nearest_similarity(rows[embedded], reference)
                return embedded, np.column_stack([np.log(top[embedded] + 1e-12), nearest])

            held_embedded, held_x = features(held_score, held_vectors)
            pooled_embedded, pooled_x = features(pooled_score, pooled_vectors)
            oos_weights = _oos_weights_fit(
                held=held_x, correct=correct[held_embedded], negatives=pooled_x
            )
            if oos_weights is not None:
                weights = np.array(oos_weights[:2])
                held_score, pooled_score = held_score.copy(), pooled_score.copy()
                held_score[held_embedded] = _sigmoid(held_x @ weights + oos_weights[2])
                pooled_score[pooled_embedded] = _sigmoid(pooled_x @ weights + oos_weights[2])
        pooled_caught = (
            np.zeros(len(pooled), dtype=bool)
            if oos_column is None
            else pooled.argmax(1) == oos_column
        )
        curve = oos_curve(
            in_scope=held_score,
            correct=correct,
            off_topic=pooled_score,
            off_topic_caught=pooled_caught,
        )
        # Each kind of negative on its own, for the record (the admin's table).
        start = 0
        for name, probs in negatives.items():
            kind_score = pooled_score[start : start + len(probs)]
            start += len(probs)
            part = oos_curve(
                in_scope=held_score,
                correct=correct,
                off_topic=kind_score,
                off_topic_caught=None if oos_column is None else probs.argmax(1) == oos_column,
            )
            for point, own in zip(curve, part, strict=True):
                point[f"{name}_recall"] = own["oos_recall"]
        suggested = oos_threshold_suggest(curve)
        if vectors is not None:
            # The TF-IDF-only model of this fold, and the cut above which it answers
            # without the embedding (TrainedClassifier.predict_without_embedding).
            report("choosing when the TF-IDF model may answer without the embedding", 0.6)
            fold_tfidf_model = _tfidf_fit(fold_tfidf, y[train_part])

            def tfidf_scores(rows: list[str]) -> np.ndarray:
                if not rows:
                    return np.zeros((0, len(column)))
                x = vectorizer.transform([features_text(text_normalise(t)) for t in rows])
                return _two_columns(np.asarray(fold_tfidf_model.decision_function(x)))

            held_tfidf = tfidf_scores(rows_of(held_part)[0])
            tfidf_temperature = _temperature_fit(held_tfidf, held_columns)
            negative_tfidf = tfidf_scores([texts[i] for i in unseen_part] + off_topic)
            embed_below = _embed_below_choose(
                # The fast path serves the setting's threshold (on the top
                # probability); a point of the curve needs the embedding anyway.
                points=[
                    (
                        float(settings.TIERDESK_ROUTER_CLARIFY_THRESHOLD),
                        held_probs.max(1),
                        pooled.max(1),
                    )
                ],
                correct=correct,
                held_embedded=held_embedded,
                negative_embedded=pooled_embedded,
                negative_caught=pooled_caught,
                tfidf_held=_softmax(held_tfidf, tfidf_temperature),
                tfidf_negatives=_softmax(negative_tfidf, tfidf_temperature),
                held_columns=held_columns,
                oos_column=oos_column,
            )
            if embed_below is not None:
                # At the setting's threshold (a shop's default operating point).
                bar = max(embed_below, float(settings.TIERDESK_ROUTER_CLARIFY_THRESHOLD))
                fast = held_embedded & (_softmax(held_tfidf, tfidf_temperature).max(1) >= bar)
                embedded_share = 1 - float(fast.sum()) / max(int(held_embedded.sum()), 1)
        calibration = {
            "suggested_threshold": suggested,
            "held_out": len(held_part),
            "unseen_intents": len(intents) - len(seen),
            "unseen_examples": len(unseen_part),
            "off_topic": len(off_topic),
            "temperature": round(temperature, 4),
            "held_out_accuracy": round(float(np.mean(held_probs.argmax(1) == held_columns)), 4),
            "score": "top probability" + ("" if oos_weights is None else " + nearest example"),
            "oos_weights": None if oos_weights is None else [round(w, 4) for w in oos_weights],
            "embed_below": embed_below,
            # Of the held-out examples that have an embedding: the share that needed it
            # at the setting's threshold.
            "embedding_share": None if embed_below is None else round(embedded_share, 4),
            "curve": curve,
        }

    adapter = None
    if finetune and shipped is not None:
        report("adapting the embeddings to every example", 0.65)
        adapter = adapter_fit(shipped, y)
    vectors = adapter_apply(adapter, shipped) if shipped is not None else None
    report(f"fitting {len(intents)} intents on {len(samples)} examples", 0.7)
    vectorizer, model, tfidf = _fit(texts, y, vectors)
    weights, bias = _weights_of(model)
    tfidf_weights = tfidf_bias = None
    if embed_below is not None:
        report("fitting the TF-IDF-only model", 0.85)
        tfidf_weights, tfidf_bias = _weights_of(_tfidf_fit(tfidf, y))
    report("storing", 0.95)
    return TrainedClassifier(
        intents=tuple(intents),
        vectorizer=vectorizer,
        weights=weights,
        bias=bias,
        sample_count=len(samples),
        train_seconds=time.perf_counter() - started,
        trained_at=timezone.now(),
        data_hash=classifier_samples_hash(samples, embeddings=embeddings, finetune=finetune),
        embedding_dim=0 if vectors is None else int(vectors.shape[1]),
        temperature=temperature,
        calibration=calibration,
        example_vectors=None
        if vectors is None or oos_weights is None
        else np.ascontiguousarray(vectors[vectors.any(1)], dtype=np.float16),
        oos_weights=oos_weights,
        tfidf_weights=tfidf_weights,
        tfidf_bias=tfidf_bias,
        tfidf_temperature=tfidf_temperature,
        embed_below=embed_below,
        adapter=adapter,
    )


# --- the stored model: trained once, loaded by every process ---------------------------


def classifier_serialize(classifier: TrainedClassifier) -> bytes:
    return zlib.compress(pickle.dumps(classifier, protocol=pickle.HIGHEST_PROTOCOL), 3)


def classifier_deserialize(blob: bytes) -> TrainedClassifier:
    # Only rows written by classifier_store (our own code) are ever loaded.
    classifier = pickle.loads(zlib.decompress(blob))
    if not isinstance(classifier, TrainedClassifier):
        raise TypeError(f"not a TrainedClassifier: {type(classifier).__name__}")
    return classifier


def classifier_stored_get(*, data_hash: str) -> TrainedClassifier | None:
    """The stored model for this training data, if one was trained by this
    scikit-learn version (a pickle must not cross versions)."""
    row = (
        ClassifierModel.objects.filter(data_hash=data_hash, sklearn_version=sklearn.__version__)
        .only("blob")
        .first()
    )
    if row is None:
        return None
    return classifier_deserialize(bytes(row.blob))


def classifier_store(
    *, classifier: TrainedClassifier, router_version: int, trained_by: str
) -> ClassifierModel:
    """Store a trained model (idempotent: the same data stores one row)."""
    blob = classifier_serialize(classifier)
    row, created = ClassifierModel.objects.get_or_create(
        data_hash=classifier.data_hash,
        defaults={
            "router_version": router_version,
            "sample_count": classifier.sample_count,
            "intent_count": len(classifier.intents),
            "train_seconds": classifier.train_seconds,
            "trained_at": classifier.trained_at,
            "trained_by": trained_by[:128],
            "sklearn_version": sklearn.__version__,
            "size_bytes": len(blob),
            "blob": blob,
        },
    )
    if not created and (
        row.router_version < router_version or row.sklearn_version != sklearn.__version__
    ):
        ClassifierModel.objects.filter(pk=row.pk).update(
            router_version=max(router_version, row.router_version),
            sklearn_version=sklearn.__version__,
            size_bytes=len(blob),
            blob=blob,
        )
    return row


# When this process first saw training data it had no stored model for (monotonic s).
_pending_since: dict[str, float] = {}


def _classifier_build(
    previous: TrainedClassifier | None, version: Hashable
) -> TrainedClassifier | None:
    """Load the stored model for the current data; train only as a last resort.

    - same data as the model in hand (a rule edit): keep it;
    - a stored model for this data (the retrain task ran): load it (~50 ms);
    - none yet, and this process has a model: keep serving it while the task runs,
      for at most ``TIERDESK_ROUTER_RETRAIN_GRACE_S`` (then the broker is presumably
      down, and the process trains and stores the model itself);
    - none, and nothing in hand (first start, or the task is off): train and store.
    """
    samples = classifier_samples()
    data_hash = classifier_samples_hash(samples)
    if previous is not None and previous.data_hash == data_hash:
        return previous
    if len({intent for _, intent in samples}) < 2:
        return None
    stored = classifier_stored_get(data_hash=data_hash)
    if stored is not None:
        _pending_since.pop(data_hash, None)
        return stored
    if previous is not None and settings.TIERDESK_ROUTER_RETRAIN_ASYNC:
        since = _pending_since.setdefault(data_hash, time.monotonic())
        if time.monotonic() - since < settings.TIERDESK_ROUTER_RETRAIN_GRACE_S:
            raise BuildPending("waiting for the router_retrain task's model")
        logger.warning(
            "no stored classifier %.0f s after the change: training in this process",
            time.monotonic() - since,
        )
    classifier = classifier_train(samples=samples)
    _pending_since.pop(data_hash, None)
    from routing.versioning import router_version_get

    try:
        classifier_store(
            classifier=classifier,
            router_version=router_version_get().version,
            trained_by=f"process:{os.getpid()}",
        )
    except Exception:
        # Storing only spares other processes the training; routing goes on.
        logger.exception("could not store the classifier this process trained")
    return classifier


_cache: VersionedCache[TrainedClassifier | None] = VersionedCache(
    name="intent classifier", source=ROUTER_VERSION, build=_classifier_build
)


def classifier_get() -> TrainedClassifier | None:
    """The classifier for the current router data, or None when there is too little
    data to train one. Loads the stored model after a change (see _classifier_build)."""
    return _cache.get()
