"""Calibrating the out-of-scope score per shop at retraining, from the shop's own
examples: leave intents out, score, repeat.

Each fold leaves about a quarter of the intents out of a model trained on the rest
(``calibration.calibration_split`` with its own seed) and holds out a fifth of the
other intents' examples. The left-out intents' examples stand in for what a shop's
shoppers ask that none of its intents covers (near its domain), beside generic
off-topic text; the held-out examples for what they ask that an intent does cover.
Over all folds, each view's weights (``routing.oos_score``) are fitted on these rows,
then the threshold at the curve's most balanced point, and the stricter one an order
intent needs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse
from sklearn.linear_model import LogisticRegression

from routing import calibration as cal
from routing.classifier import EMBEDDING_WEIGHT, features_text
from routing.classifier_fit import model_fit
from routing.normalise import text_normalise
from routing.oos_score import (
    E5,
    MINILM,
    SIGNALS,
    OosScorer,
    ScoreView,
    Vocabulary,
    centroids_of,
    similarity_signals,
)
from routing.types import ORDER_INTENTS, OUT_OF_SCOPE

# Folds (each with its own left-out intents); fewer on a large training set, where one
# fold's model takes tens of seconds to fit.
FOLDS = 4
FOLDS_LARGE = 2
LARGE_SET = 3000
# The share of out-of-scope messages an order intent may still take at its threshold
# (on the calibration rows): an unsure order guess asks first.
ORDER_FLOW_MAX = 0.02
# The share of right answers on the held-out examples the out-of-scope point may give
# up (``threshold_choose``).
RETAIN = 0.85


@dataclass(frozen=True)
class ShopTexts:
    """The shop's examples and the generic off-topic text, with each view's vectors
    (a zero row where the view doesn't read the text; None: no such view)."""

    texts: list[str]
    y: np.ndarray
    intents: list[str]
    off_topic: list[str]
    minilm: np.ndarray | None
    minilm_off: np.ndarray | None
    e5: np.ndarray | None
    e5_off: np.ndarray | None

    def views(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        out = {}
        if self.minilm is not None and self.minilm_off is not None:
            out[MINILM] = (self.minilm, self.minilm_off)
        if self.e5 is not None and self.e5_off is not None:
            out[E5] = (self.e5, self.e5_off)
        return out


@dataclass
class _Rows:
    """The folds' scored rows: held-out examples (``held``) and negatives."""

    view: list[str | None] = field(default_factory=list)
    x: list[np.ndarray] = field(default_factory=list)
    held: list[np.ndarray] = field(default_factory=list)
    correct: list[np.ndarray] = field(default_factory=list)
    kind: list[str] = field(default_factory=list)  # held, unseen_intents, off_topic
    top_intent: list[str] = field(default_factory=list)


def _view_of(row: int, vectors: dict[str, np.ndarray]) -> str | None:
    """MiniLM where it reads the text, else e5, else none."""
    for name in (MINILM, E5):
        matrix = vectors.get(name)
        if matrix is not None and matrix[row].any():
            return name
    return None


@dataclass(frozen=True)
class _Part:
    kind: str
    texts: list[str]
    minilm: np.ndarray | None
    vectors: dict[str, np.ndarray]  # per view
    truth: np.ndarray | None  # the right intents' labels (held-out examples)


def _fold_rows(data: ShopTexts, seed: int, keep: Sequence[int], rows: _Rows) -> None:
    """One fold: a model without some intents, its held-out examples and negatives
    scored, each row's signals added to ``rows``."""
    train, held, unseen = cal.calibration_split(data.y, keep=keep, seed=seed)
    if not (len(held) and len(np.unique(data.y[train])) >= 2):
        return
    minilm = data.minilm
    vectorizer, model, _ = model_fit(
        [data.texts[i] for i in train], data.y[train], None if minilm is None else minilm[train]
    )
    classes = np.array([int(c) for c in model.classes_])
    views = data.views()
    parts = [
        _Part(
            kind,
            [data.texts[i] for i in part],
            None if minilm is None else minilm[part],
            {n: m[part] for n, (m, _) in views.items()},
            data.y[part] if kind == "held" else None,
        )
        for kind, part in (("held", held), ("unseen_intents", unseen))
    ]
    if data.off_topic:
        parts.append(
            _Part(
                "off_topic",
                data.off_topic,
                data.minilm_off,
                {n: o for n, (_, o) in views.items()},
                None,
            )
        )

    def decision(part: _Part) -> np.ndarray:
        if not part.texts:  # fewer than four intents: none left out
            return np.zeros((0, len(classes)))
        x = vectorizer.transform([features_text(text_normalise(t)) for t in part.texts])
        if part.minilm is not None:
            x = sparse.hstack([x, sparse.csr_matrix(EMBEDDING_WEIGHT * part.minilm)]).tocsr()
        return cal.two_columns(np.asarray(model.decision_function(x)))

    scores = [decision(part) for part in parts]
    column = {label: i for i, label in enumerate(classes)}
    temperature = cal.temperature_fit(
        scores[0], np.array([column[int(label)] for label in data.y[held]])
    )
    vocabulary = Vocabulary.of([text_normalise(data.texts[i]) for i in train])
    references = {}
    for name, (matrix, _) in views.items():
        mask = matrix[train].any(1)
        examples, labels = matrix[train][mask], data.y[train][mask]
        references[name] = (examples, labels, centroids_of(examples, labels, len(data.intents)))
    for part, raw in zip(parts, scores, strict=True):
        _part_rows(part, cal.softmax(raw, temperature), classes, vocabulary, references, rows, data)


def _part_rows(
    part: _Part,
    probs: np.ndarray,
    classes: np.ndarray,
    vocabulary: Vocabulary,
    references: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]],
    rows: _Rows,
    data: ShopTexts,
) -> None:
    if not len(probs):
        return
    order = np.argsort(-probs, axis=1)
    top = probs[np.arange(len(probs)), order[:, 0]]
    second = probs[np.arange(len(probs)), order[:, 1]] if probs.shape[1] > 1 else np.zeros_like(top)
    labels = classes[order[:, 0]]
    unknown = np.array([vocabulary.unknown(text_normalise(t)) for t in part.texts])
    x = np.column_stack([np.log(top + 1e-12), top - second, unknown, np.zeros((len(top), 4))])
    view_of = [_view_of(r, part.vectors) for r in range(len(top))]
    for name, (examples, example_labels, centroids) in references.items():
        mask = np.array([v == name for v in view_of])
        if mask.any():
            x[mask, 4:] = similarity_signals(
                queries=part.vectors[name][mask],
                top_labels=labels[mask],
                examples=examples,
                labels=example_labels,
                centroids=centroids,
            )
    rows.view.extend(view_of)
    rows.x.extend(x)
    rows.held.append(np.full(len(top), part.kind == "held"))
    rows.correct.append(
        labels == part.truth if part.truth is not None else np.zeros(len(top), dtype=bool)
    )
    rows.kind.extend([part.kind] * len(top))
    rows.top_intent.extend(data.intents[label] for label in labels)


def _weights_fit(x: np.ndarray, target: np.ndarray) -> tuple[tuple[float, ...], float] | None:
    if len(np.unique(target)) < 2:
        return None
    model = LogisticRegression(C=1.0, class_weight="balanced", max_iter=2000)
    model.fit(x, target)
    return tuple(float(w) for w in model.coef_[0]), float(model.intercept_[0])


def _score_rows(rows: _Rows, weights: dict[str, tuple[tuple[float, ...], float]]) -> np.ndarray:
    """Each row's score: its view's, or the top probability without one."""
    x = np.vstack(rows.x)
    out = np.exp(x[:, 0])
    for name, (w, b) in weights.items():
        mask = np.array([v == name for v in rows.view])
        if mask.any():
            out[mask] = 1.0 / (1.0 + np.exp(-(x[mask] @ np.array(w) + b)))
    return out


def oos_calibrate(
    data: ShopTexts, *, report: Callable[[str, float], None] | None = None
) -> tuple[OosScorer | None, dict[str, object]]:
    """The shop's scorer (None without any view) and what the calibration measured:
    the curve, its suggested point, the order intents' threshold, the folds."""
    keep = [data.intents.index(OUT_OF_SCOPE)] if OUT_OF_SCOPE in data.intents else []
    folds = FOLDS_LARGE if len(data.texts) > LARGE_SET else FOLDS
    rows = _Rows()
    for fold in range(folds):
        if report is not None:
            report(f"out-of-scope calibration: leaving intents out, fold {fold + 1}/{folds}", 0.5)
        _fold_rows(data, 17 + fold, keep, rows)
    if not rows.x:
        return None, {}
    held = np.concatenate(rows.held)
    correct = np.concatenate(rows.correct)
    x = np.vstack(rows.x)
    weights = {}
    for name in data.views():
        mask = np.array([v == name for v in rows.view])
        fitted = _weights_fit(x[mask], (held & correct)[mask].astype(int)) if mask.any() else None
        if fitted is not None:
            weights[name] = fitted
    score = _score_rows(rows, weights)
    kinds = np.array(rows.kind)
    caught = np.array([t == OUT_OF_SCOPE for t in rows.top_intent]) & ~held
    curve = cal.oos_curve(
        in_scope=score[held],
        correct=correct[held],
        off_topic=score[~held],
        off_topic_caught=caught[~held],
    )
    for kind in ("unseen_intents", "off_topic"):
        mask = kinds == kind
        part = cal.oos_curve(
            in_scope=score[held],
            correct=correct[held],
            off_topic=score[mask],
            off_topic_caught=caught[mask],
        )
        for point, own in zip(curve, part, strict=True):
            point[f"{kind}_recall"] = own["oos_recall"]
    threshold = threshold_choose(curve, float(correct[held].mean()))
    order_threshold = _order_threshold(rows, score, held, caught, threshold)
    views = {}
    for name, (matrix, _) in data.views().items():
        if name not in weights:
            continue
        present = np.asarray(matrix.any(1), dtype=bool)
        views[name] = ScoreView(
            examples=np.ascontiguousarray(matrix[present], dtype=np.float16),
            labels=data.y[present],
            centroids=centroids_of(matrix[present], data.y[present], len(data.intents)),
            weights=weights[name][0],
            bias=weights[name][1],
        )
    measured: dict[str, object] = {
        "folds": folds,
        "suggested_threshold": threshold,
        "order_threshold": order_threshold,
        "score": " + ".join(SIGNALS) + f" ({', '.join(views) or 'no embedder'})",
        "score_weights": {n: [round(w, 4) for w in (*ws, b)] for n, (ws, b) in weights.items()},
        "calibration_rows": {
            k: int((kinds == k).sum()) for k in ("held", "unseen_intents", "off_topic")
        },
        "curve": curve,
    }
    if not views:
        return None, measured
    scorer = OosScorer(
        intents=tuple(data.intents),
        views=views,
        threshold=threshold,
        order_threshold=order_threshold,
        vocabulary=Vocabulary.of([text_normalise(t) for t in data.texts]),
    )
    return scorer, measured


def threshold_choose(curve: list[dict[str, float]], top1: float) -> float:
    """The point that rejects the most out-of-scope rows while the in-scope rows the
    classifier ranks right keep at least RETAIN of their answers; without one, the
    most balanced point. The held-out examples come from folds trained on fewer
    examples and intents than the shop's model, so their in-scope accuracy is lower
    than shoppers' messages get: the balanced point on them asks too rarely."""
    affordable = [p for p in curve if p["in_scope_accuracy"] >= RETAIN * top1]
    if not affordable:
        return cal.oos_threshold_suggest(curve)
    return float(max(affordable, key=lambda p: (p["oos_recall"], -p["threshold"]))["threshold"])


def _order_threshold(
    rows: _Rows, score: np.ndarray, held: np.ndarray, caught: np.ndarray, threshold: float
) -> float:
    """The lowest point at or above ``threshold`` where at most ORDER_FLOW_MAX of the
    negatives would start an order flow."""
    to_order = np.array([t in ORDER_INTENTS for t in rows.top_intent]) & ~held & ~caught
    negatives = max(int((~held).sum()), 1)
    for point in np.round(np.arange(threshold, 0.99, 0.025), 3):
        if float((to_order & (score >= point)).sum()) / negatives <= ORDER_FLOW_MAX:
            return float(point)
    return 0.975
