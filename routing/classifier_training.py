"""Training the intent classifier: its samples and their hash, the calibration on a
held-out fold (routing/calibration.py), then the model on every example."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.utils import timezone
from scipy import sparse
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import FeatureUnion

from routing import calibration as cal
from routing.classifier import EMBEDDING_WEIGHT, TrainedClassifier, features_text, sigmoid
from routing.classifier_fit import model_fit, tfidf_fit, weights_of
from routing.encoder import adapter_apply, adapter_fit
from routing.example_embeddings import examples_embed
from routing.models import Utterance
from routing.normalise import text_normalise
from routing.oos_calibration import ShopTexts, oos_calibrate
from routing.oos_score import OosScorer
from routing.types import OUT_OF_SCOPE

Report = Callable[[str, float], None]


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


def off_topic_texts() -> list[str]:
    """Generic off-topic messages (seed_data/offtopic.txt): the negatives the
    out-of-scope trade-off is measured on, whatever the shop's intents are."""
    # Read here, not through routing.seed, which imports the handoff recogniser and
    # through it the classifier (an import cycle).
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
    shipped = off_vectors = None
    if embeddings:
        vectors = examples_embed(texts + off_topic, report, (0.0, 0.5))
        shipped, off_vectors = vectors[: len(texts)], vectors[len(texts) :]
    calibrated = Calibrated()
    if calibrate:
        calibrated = _calibrate(
            _Data(texts, y, intents, index, off_topic, shipped, off_vectors),
            finetune=finetune,
            report=report,
        )
        if shipped is not None and off_vectors is not None:
            calibrated = _oos_calibrate(
                calibrated, texts, y, intents, off_topic, shipped, off_vectors, report
            )
    return _final_fit(
        samples=samples,
        texts=texts,
        y=y,
        intents=intents,
        shipped=shipped,
        calibrated=calibrated,
        embeddings=embeddings,
        finetune=finetune,
        started=started,
        report=report,
    )


@dataclass(frozen=True)
class Calibrated:
    """What the calibration fold measured (the defaults: no calibration)."""

    temperature: float = 1.0
    calibration: dict[str, Any] | None = None
    oos_weights: tuple[float, float, float] | None = None
    embed_below: float | None = None
    tfidf_temperature: float = 1.0
    oos_scorer: OosScorer | None = None


def _oos_calibrate(
    calibrated: Calibrated,
    texts: list[str],
    y: np.ndarray,
    intents: list[str],
    off_topic: list[str],
    minilm: np.ndarray,
    minilm_off: np.ndarray,
    report: Report,
) -> Calibrated:
    """The shop's out-of-scope score over leave-intents-out folds (routing.oos_calibration):
    its curve and suggested point replace the single fold's."""
    from knowledge import multilingual

    e5 = e5_off = None
    if multilingual.available():
        # e5 reads what MiniLM doesn't (a zero MiniLM row: not English).
        report("embedding the examples MiniLM doesn't read (multilingual)", 0.45)
        e5 = _e5_rows(texts, minilm, multilingual.embed_queries)
        e5_off = _e5_rows(off_topic, minilm_off, multilingual.embed_queries)
    data = ShopTexts(texts, y, intents, off_topic, minilm, minilm_off, e5, e5_off)
    scorer, measured = oos_calibrate(data, report=report)
    if scorer is None:
        return calibrated
    calibration = {**(calibrated.calibration or {}), **measured}
    return replace(calibrated, calibration=calibration, oos_scorer=scorer)


def _e5_rows(
    texts: list[str], minilm: np.ndarray, embed: Callable[[list[str]], np.ndarray]
) -> np.ndarray:
    out = np.zeros((len(texts), minilm.shape[1] if minilm.size else 384), dtype=np.float32)
    rows = np.flatnonzero(~minilm.any(1))
    if len(rows):
        vectors = embed([texts[i] for i in rows])
        out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
        out[rows] = vectors
    return out


@dataclass(frozen=True)
class _Data:
    """The training examples: texts, labels, the intents' names and index, the generic
    off-topic texts, and the embeddings of both (None without embeddings)."""

    texts: list[str]
    y: np.ndarray
    intents: list[str]
    index: dict[str, int]
    off_topic: list[str]
    vectors: np.ndarray | None
    off_vectors: np.ndarray | None


@dataclass(frozen=True)
class _Fold:
    """The calibration fold's model, trained on its training part only."""

    data: _Data
    vectors: np.ndarray | None  # the examples' embeddings as the fold sees them
    vectorizer: FeatureUnion
    model: LogisticRegression
    tfidf: Any  # the training part's TF-IDF features
    column: dict[int, int]  # label -> the model's column (the seen intents)

    def decision(self, rows: list[str], rows_vectors: np.ndarray | None) -> np.ndarray:
        if not rows:
            return np.zeros((0, len(self.column)))
        x = self.vectorizer.transform([features_text(text_normalise(t)) for t in rows])
        if rows_vectors is not None:
            x = sparse.hstack([x, sparse.csr_matrix(EMBEDDING_WEIGHT * rows_vectors)]).tocsr()
        return cal.two_columns(np.asarray(self.model.decision_function(x)))

    def rows_of(self, part: np.ndarray) -> tuple[list[str], np.ndarray | None]:
        texts = self.data.texts
        return [texts[i] for i in part], None if self.vectors is None else self.vectors[part]


@dataclass
class _Held:
    """The fold's held-out examples and negatives (unseen intents' examples, off-topic
    text), scored: the inputs of the out-of-scope curve and of the TF-IDF cut."""

    train_part: np.ndarray
    held_part: np.ndarray
    unseen_part: np.ndarray
    held_columns: np.ndarray
    held_probs: np.ndarray
    negatives: dict[str, np.ndarray]
    pooled: np.ndarray
    correct: np.ndarray
    oos_column: int | None
    held_score: np.ndarray
    pooled_score: np.ndarray
    held_embedded: np.ndarray | None = None
    pooled_embedded: np.ndarray | None = None


def _calibrate(data: _Data, *, finetune: bool, report: Report) -> Calibrated:
    """Train on the calibration fold's training part and measure on the rest."""
    index, y, vectors, off_vectors = data.index, data.y, data.vectors, data.off_vectors
    keep = [index[OUT_OF_SCOPE]] if OUT_OF_SCOPE in index else []
    train_part, held_part, unseen_part = cal.calibration_split(y, keep=keep)
    seen = np.unique(y[train_part])
    if finetune and vectors is not None and off_vectors is not None:
        # The calibration fold's adapter, trained on its training part only.
        report("adapting the embeddings to the calibration fold", 0.5)
        fold_adapter = adapter_fit(vectors[train_part], y[train_part])
        vectors = adapter_apply(fold_adapter, vectors)
        off_vectors = adapter_apply(fold_adapter, off_vectors)
    if not (len(held_part) and len(seen) >= 2):
        return Calibrated()
    report(
        f"calibrating on {len(held_part)} held-out examples and "
        f"{len(unseen_part)} of {len(data.intents) - len(seen)} intents left out",
        0.5,
    )
    vectorizer, model, fold_tfidf = model_fit(
        [data.texts[i] for i in train_part],
        y[train_part],
        None if vectors is None else vectors[train_part],
    )
    column = {int(label): i for i, label in enumerate(model.classes_)}
    fold = _Fold(data, vectors, vectorizer, model, fold_tfidf, column)
    held, temperature = _held_score(fold, train_part, held_part, unseen_part, off_vectors)
    oos_weights = None
    if vectors is not None:
        oos_weights = _in_scope_fit(held, vectors=vectors, off_vectors=off_vectors)
    pooled_caught = (
        np.zeros(len(held.pooled), dtype=bool)
        if held.oos_column is None
        else held.pooled.argmax(1) == held.oos_column
    )
    curve = _curve_build(held, pooled_caught)
    suggested = cal.oos_threshold_suggest(curve)
    embed_below, tfidf_temperature, embedded_share = None, 1.0, 1.0
    if vectors is not None:
        # The TF-IDF-only model of this fold, and the cut above which it answers
        # without the embedding (TrainedClassifier.predict_without_embedding).
        report("choosing when the TF-IDF model may answer without the embedding", 0.6)
        embed_below, tfidf_temperature, embedded_share = _embed_below_fit(fold, held, pooled_caught)
    calibration = {
        "suggested_threshold": suggested,
        "held_out": len(held_part),
        "unseen_intents": len(data.intents) - len(seen),
        "unseen_examples": len(unseen_part),
        "off_topic": len(data.off_topic),
        "temperature": round(temperature, 4),
        "held_out_accuracy": round(
            float(np.mean(held.held_probs.argmax(1) == held.held_columns)), 4
        ),
        "score": "top probability" + ("" if oos_weights is None else " + nearest example"),
        "oos_weights": None if oos_weights is None else [round(w, 4) for w in oos_weights],
        "embed_below": embed_below,
        # Of the held-out examples that have an embedding: the share that needed it
        # at the setting's threshold.
        "embedding_share": None if embed_below is None else round(embedded_share, 4),
        "curve": curve,
    }
    return Calibrated(temperature, calibration, oos_weights, embed_below, tfidf_temperature)


def _held_score(
    fold: _Fold,
    train_part: np.ndarray,
    held_part: np.ndarray,
    unseen_part: np.ndarray,
    off_vectors: np.ndarray | None,
) -> tuple[_Held, float]:
    """The fold's held-out examples and negatives scored by its model, and the
    temperature fitted on the held-out ones."""
    data = fold.data
    held_scores = fold.decision(*fold.rows_of(held_part))
    held_columns = np.array([fold.column[int(label)] for label in data.y[held_part]])
    temperature = cal.temperature_fit(held_scores, held_columns)
    held_probs = cal.softmax(held_scores, temperature)
    oos_column = fold.column.get(data.index[OUT_OF_SCOPE]) if OUT_OF_SCOPE in data.index else None
    negatives = {
        "unseen_intents": cal.softmax(fold.decision(*fold.rows_of(unseen_part)), temperature),
        "off_topic": cal.softmax(fold.decision(data.off_topic, off_vectors), temperature)
        if data.off_topic
        else np.zeros((0, len(fold.column))),
    }
    pooled = np.vstack(list(negatives.values()))
    correct = held_probs.argmax(1) == held_columns
    held = _Held(
        train_part=train_part,
        held_part=held_part,
        unseen_part=unseen_part,
        held_columns=held_columns,
        held_probs=held_probs,
        negatives=negatives,
        pooled=pooled,
        correct=correct,
        oos_column=oos_column,
        held_score=held_probs.max(1),
        pooled_score=pooled.max(1),
    )
    return held, temperature


def _in_scope_fit(
    held: _Held, *, vectors: np.ndarray, off_vectors: np.ndarray | None
) -> tuple[float, float, float] | None:
    """The in-scope score (TrainedClassifier.in_scope_score), fitted on this fold:
    similarity to the nearest of the fold's training examples. Sets which held-out
    examples and negatives have an embedding, and their scores by the fitted weights."""
    reference = vectors[held.train_part]
    reference = reference[reference.any(1)]
    held_vectors = vectors[held.held_part]
    pooled_vectors = np.vstack(
        [vectors[held.unseen_part], off_vectors if off_vectors is not None else vectors[:0]]
    )

    def features(top: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        embedded = np.asarray(rows.any(1), dtype=bool)
        nearest = cal.nearest_similarity(rows[embedded], reference)
        return embedded, np.column_stack([np.log(top[embedded] + 1e-12), nearest])

    held.held_embedded, held_x = features(held.held_score, held_vectors)
    held.pooled_embedded, pooled_x = features(held.pooled_score, pooled_vectors)
    oos_weights = cal.oos_weights_fit(
        held=held_x, correct=held.correct[held.held_embedded], negatives=pooled_x
    )
    if oos_weights is not None:
        weights = np.array(oos_weights[:2])
        held.held_score, held.pooled_score = held.held_score.copy(), held.pooled_score.copy()
        held.held_score[held.held_embedded] = sigmoid(held_x @ weights + oos_weights[2])
        held.pooled_score[held.pooled_embedded] = sigmoid(pooled_x @ weights + oos_weights[2])
    return oos_weights


def _curve_build(held: _Held, pooled_caught: np.ndarray) -> list[dict[str, float]]:
    """The out-of-scope trade-off over all negatives, with each kind's recall beside
    it for the record (the admin's table)."""
    curve = cal.oos_curve(
        in_scope=held.held_score,
        correct=held.correct,
        off_topic=held.pooled_score,
        off_topic_caught=pooled_caught,
    )
    start = 0
    for name, probs in held.negatives.items():
        kind_score = held.pooled_score[start : start + len(probs)]
        start += len(probs)
        part = cal.oos_curve(
            in_scope=held.held_score,
            correct=held.correct,
            off_topic=kind_score,
            off_topic_caught=None
            if held.oos_column is None
            else probs.argmax(1) == held.oos_column,
        )
        for point, own in zip(curve, part, strict=True):
            point[f"{name}_recall"] = own["oos_recall"]
    return curve


def _embed_below_fit(
    fold: _Fold, held: _Held, pooled_caught: np.ndarray
) -> tuple[float | None, float, float]:
    """(the cut, the TF-IDF-only model's temperature, the share of held-out examples
    with an embedding that still needed it at the setting's threshold)."""
    data = fold.data
    assert held.held_embedded is not None and held.pooled_embedded is not None
    fold_tfidf_model = tfidf_fit(fold.tfidf, data.y[held.train_part])

    def tfidf_scores(rows: list[str]) -> np.ndarray:
        if not rows:
            return np.zeros((0, len(fold.column)))
        x = fold.vectorizer.transform([features_text(text_normalise(t)) for t in rows])
        return cal.two_columns(np.asarray(fold_tfidf_model.decision_function(x)))

    held_tfidf = tfidf_scores(fold.rows_of(held.held_part)[0])
    tfidf_temperature = cal.temperature_fit(held_tfidf, held.held_columns)
    negative_tfidf = tfidf_scores([data.texts[i] for i in held.unseen_part] + data.off_topic)
    threshold = float(settings.TIERDESK_ROUTER_CLARIFY_THRESHOLD)
    embed_below = cal.embed_below_choose(
        # The fast path serves the setting's threshold (on the top probability); a
        # point of the curve needs the embedding anyway.
        points=[(threshold, held.held_probs.max(1), held.pooled.max(1))],
        correct=held.correct,
        held_embedded=held.held_embedded,
        negative_embedded=held.pooled_embedded,
        negative_caught=pooled_caught,
        tfidf_held=cal.softmax(held_tfidf, tfidf_temperature),
        tfidf_negatives=cal.softmax(negative_tfidf, tfidf_temperature),
        held_columns=held.held_columns,
        oos_column=held.oos_column,
    )
    embedded_share = 1.0
    if embed_below is not None:
        # At the setting's threshold (a shop's default operating point).
        bar = max(embed_below, threshold)
        fast = held.held_embedded & (cal.softmax(held_tfidf, tfidf_temperature).max(1) >= bar)
        embedded_share = 1 - float(fast.sum()) / max(int(held.held_embedded.sum()), 1)
    return embed_below, tfidf_temperature, embedded_share


def _final_fit(
    *,
    samples: Sequence[tuple[str, str]],
    texts: list[str],
    y: np.ndarray,
    intents: list[str],
    shipped: np.ndarray | None,
    calibrated: Calibrated,
    embeddings: bool,
    finetune: bool,
    started: float,
    report: Report,
) -> TrainedClassifier:
    """The model on every example, with what the calibration measured."""
    adapter = None
    if finetune and shipped is not None:
        report("adapting the embeddings to every example", 0.65)
        adapter = adapter_fit(shipped, y)
    vectors = adapter_apply(adapter, shipped) if shipped is not None else None
    report(f"fitting {len(intents)} intents on {len(samples)} examples", 0.7)
    vectorizer, model, tfidf = model_fit(texts, y, vectors)
    weights, bias = weights_of(model)
    tfidf_weights = tfidf_bias = None
    if calibrated.embed_below is not None:
        report("fitting the TF-IDF-only model", 0.85)
        tfidf_weights, tfidf_bias = weights_of(tfidf_fit(tfidf, y))
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
        temperature=calibrated.temperature,
        calibration=calibrated.calibration,
        example_vectors=None
        if vectors is None or calibrated.oos_weights is None
        else np.ascontiguousarray(vectors[vectors.any(1)], dtype=np.float16),
        oos_weights=calibrated.oos_weights,
        tfidf_weights=tfidf_weights,
        tfidf_bias=tfidf_bias,
        tfidf_temperature=calibrated.tfidf_temperature,
        embed_below=calibrated.embed_below,
        adapter=adapter,
        oos_scorer=calibrated.oos_scorer,
    )
