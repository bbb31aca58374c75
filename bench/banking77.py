"""The development benchmark: BANKING77 (third_party/banking77, CC BY 4.0) through the
product's own path, beside three plain baselines in the same run (``make eval-router``).

For each variant the intents are loaded with the importer (``routing.interchange``,
the CSV as published), the classifier is trained and stored by the retrain service
(``routing.services.router_model_train``, what the Celery task runs), and every test
query is routed by ``routing.router.route_decide`` against the live snapshot:

- ``fewshot10``: 10 training examples per intent (a fixed seeded sample);
- ``full``: all 10,003 training examples;
- ``oos``: 20 intents (a fixed seeded choice) left out of training; their test
  queries must be asked to clarify (out of scope), the others routed right. The
  threshold is the one the training suggested (``calibration.suggested_threshold``,
  from held-out examples, the examples of a quarter of the training intents left out
  of the calibration model, and generic off-topic text: never from these test queries).

Baselines (fitted on the same examples; threshold picked the same way: the product's
calibration split of the training examples, a quarter of the intents left out and a
fifth of the others' examples held out, plus the off-topic text; the most balanced
point): TF-IDF + logistic regression, MiniLM embeddings + logistic regression, and a
semantic-router-style nearest centroid (cosine to each intent's mean embedding).

Accuracy counts a query asked to clarify as wrong. A different domain from a shop on
purpose: it says whether the router learns *any* shop's intents from a few examples.
"""

from __future__ import annotations

import csv
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

DATA_DIR = Path(__file__).resolve().parents[1] / "third_party" / "banking77"
SEED = 17
FEWSHOT = 10
OOS_HELD_INTENTS = 20
TARGETS = {
    "fewshot10_accuracy_min": 0.85,
    "full_accuracy_min": 0.93,
    "oos_recall_min": 0.85,
    "oos_in_scope_accuracy_min": 0.85,
}


@dataclass(frozen=True)
class Row:
    text: str
    intent: str


def rows_load(split: str) -> list[Row]:
    """The rows, with intent names as the router takes them (letters, digits, - and _):
    BANKING77 has one "reverted_card_payment?", which the importer rightly refuses."""
    with (DATA_DIR / f"{split}.csv").open(encoding="utf-8", newline="") as handle:
        return [
            Row(r["text"].strip(), re.sub(r"[^-a-zA-Z0-9_]", "", r["category"].strip()))
            for r in csv.DictReader(handle)
        ]


def variant_rows(name: str, train: list[Row]) -> tuple[list[Row], set[str]]:
    """The training rows of a variant and the intents held out of it."""
    intents = sorted({r.intent for r in train})
    if name == "fewshot10":
        rng = random.Random(SEED)
        by_intent: dict[str, list[Row]] = {}
        for row in train:
            by_intent.setdefault(row.intent, []).append(row)
        return [r for i in intents for r in rng.sample(by_intent[i], FEWSHOT)], set()
    if name == "oos":
        held = set(random.Random(SEED).sample(intents, OOS_HELD_INTENTS))
        return [r for r in train if r.intent not in held], held
    return list(train), set()


def rows_csv(rows: list[Row]) -> str:
    import io

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["text", "category"])
    writer.writerows([r.text, r.intent] for r in rows)
    return out.getvalue()


def scores_report(
    *, predicted: list[str | None], test: list[Row], held: set[str]
) -> dict[str, Any]:
    """Accuracy on in-scope queries (None = asked to clarify, counted wrong) and, with
    held-out intents, their out-of-scope recall."""
    in_scope = [(p, r) for p, r in zip(predicted, test, strict=True) if r.intent not in held]
    out = [p for p, r in zip(predicted, test, strict=True) if r.intent in held]
    report: dict[str, Any] = {
        "queries": len(test),
        "accuracy": round(sum(p == r.intent for p, r in in_scope) / len(in_scope), 4),
        "clarified": round(sum(p is None for p, _ in in_scope) / len(in_scope), 4),
    }
    answered = [(p, r) for p, r in in_scope if p is not None]
    # Of the in-scope queries the router answered (did not ask to rephrase): right.
    report["answered_accuracy"] = (
        round(sum(p == r.intent for p, r in answered) / len(answered), 4) if answered else None
    )
    if held:
        report["oos_queries"] = len(out)
        report["oos_recall"] = round(sum(p is None for p in out) / len(out), 4)
    return report


# --- the product's path ------------------------------------------------------------------


def product_run(
    *, name: str, rows: list[Row], test: list[Row], held: set[str], test_vectors: np.ndarray
) -> dict[str, Any]:
    from routing.interchange import intents_import
    from routing.models import Intent
    from routing.router import route_decide, router_snapshot_get
    from routing.services import router_model_train
    from routing.types import CLARIFY
    from routing.versioning import router_caches_expire, router_version_get

    Intent.objects.all().delete()
    started = time.perf_counter()
    plan = intents_import(rows_csv(rows), fmt="csv", default_language="en", default_tier="L3")
    imported_s = time.perf_counter() - started
    trained = router_model_train(version=router_version_get().version, trained_by="eval")
    router_caches_expire()
    snapshot = router_snapshot_get()
    classifier = snapshot.classifier
    assert classifier is not None
    calibration = classifier.calibration or {}
    # In-scope variants: the configured clarify threshold; the out-of-scope variant:
    # the threshold this training suggested (held-out examples + off-topic text).
    threshold = calibration.get("suggested_threshold") if held else None
    predicted: list[str | None] = []
    latencies = []
    top_probabilities = []
    for row, vector in zip(test, test_vectors, strict=True):
        t = time.perf_counter()
        decision = route_decide(
            text=row.text,
            language="en",
            snapshot=snapshot,
            clarify_threshold=threshold,
            embedding=vector if classifier.embedding_dim else None,
            curve_threshold=threshold is not None,
        )
        latencies.append((time.perf_counter() - t) * 1000)
        predicted.append(None if decision.tier == CLARIFY else decision.intent)
        top_probabilities.append(decision.confidence)
    report = scores_report(predicted=predicted, test=test, held=held)
    # Top-1 of the classifier alone (the literature's figure: no clarify threshold).
    top1 = [
        classifier.predict(
            text=_normalise(row.text), embedding=vector if classifier.embedding_dim else None
        )[0][0]
        for row, vector in zip(test, test_vectors, strict=True)
    ]
    report["top1_accuracy"] = round(
        sum(p == r.intent for p, r in zip(top1, test, strict=True) if r.intent not in held)
        / sum(r.intent not in held for r in test),
        4,
    )
    report.update(
        {
            "threshold": threshold
            if threshold is not None
            else "TIERDESK_ROUTER_CLARIFY_THRESHOLD",
            "training_examples": len(rows),
            "intents": len({r.intent for r in rows}),
            "import_seconds": round(imported_s, 2),
            "import_utterances_added": plan.totals["utterances_added"],
            "retrain": trained,
            "embeddings": bool(classifier.embedding_dim),
            # The embedding adapter (routing.encoder), trained on these examples.
            "adapter": classifier.adapter is not None,
            "temperature": classifier.temperature,
            "calibration": calibration,
            "decision_ms_p50": round(float(np.percentile(latencies, 50)), 3),
            "decision_ms_p95": round(float(np.percentile(latencies, 95)), 3),
        }
    )
    if held:
        report["test_curve"] = _test_curve(top_probabilities, top1, test, held)
    return report


def _normalise(text: str) -> str:
    from routing.normalise import text_normalise

    return text_normalise(text)


def _test_curve(
    probabilities: list[float], top1: list[str], test: list[Row], held: set[str]
) -> list[dict[str, float]]:
    """For the record, the trade-off on the test queries themselves (not used to
    choose anything)."""
    probs = np.array(probabilities)
    in_scope = np.array([r.intent not in held for r in test])
    correct = np.array([p == r.intent for p, r in zip(top1, test, strict=True)])
    curve = []
    for threshold in np.round(np.arange(0.05, 1.0, 0.05), 2):
        curve.append(
            {
                "threshold": float(threshold),
                "in_scope_accuracy": round(
                    float(np.mean((correct & (probs >= threshold))[in_scope])), 4
                ),
                "oos_recall": round(float(np.mean((probs < threshold)[~in_scope])), 4),
            }
        )
    return curve


# --- baselines -----------------------------------------------------------------------------


def _baseline_run(
    *,
    fit: Callable[[np.ndarray, np.ndarray], Callable[[np.ndarray], np.ndarray]],
    train_index: np.ndarray,
    y: np.ndarray,
    test_index: np.ndarray,
    off_index: np.ndarray,
    labels: list[str],
    test: list[Row],
    held: set[str],
) -> dict[str, Any]:
    """Fit ``fit(index, y) -> score(index)`` (rows of a shared feature table); with
    held-out intents, pick the threshold on an 80/20 split + off-topic text first."""
    from routing.calibration import calibration_split

    started = time.perf_counter()
    threshold = None
    if held:
        # The product's calibration split: a quarter of the intents left out, a fifth
        # of the others' examples held out; the most balanced point.
        fit_part, held_part, unseen_part = calibration_split(y)
        score = fit(train_index[fit_part], y[fit_part])
        held_scores = score(train_index[held_part])
        negative_scores = score(np.concatenate([train_index[unseen_part], off_index]))
        held_top = held_scores.max(1)
        correct = held_scores.argmax(1) == y[held_part]
        negative_top = negative_scores.max(1)
        candidates = np.unique(
            np.quantile(np.concatenate([held_top, negative_top]), np.linspace(0, 1, 101))
        )
        best = max(
            candidates,
            key=lambda t: min(np.mean(correct & (held_top >= t)), np.mean(negative_top < t)),
        )
        threshold = float(best)
    score = fit(train_index, y)
    test_scores = score(test_index)
    top = test_scores.argmax(1)
    predicted: list[str | None] = [labels[i] for i in top]
    if threshold is not None:
        predicted = [
            None if s < threshold else p for s, p in zip(test_scores.max(1), predicted, strict=True)
        ]
    report = scores_report(predicted=predicted, test=test, held=held)
    report["threshold"] = None if threshold is None else round(threshold, 4)
    report["seconds"] = round(time.perf_counter() - started, 2)
    # For a caller that scores them its own way (bench/router_shop.py); not stored.
    report["predicted"] = predicted
    return report


def baselines_run(
    *,
    rows: list[Row],
    test: list[Row],
    held: set[str],
    off_topic: list[str],
    vectors: dict[str, np.ndarray],
) -> dict[str, Any]:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    labels = sorted({r.intent for r in rows})
    index = {label: i for i, label in enumerate(labels)}
    texts = [r.text for r in rows] + [r.text for r in test] + off_topic
    train_index = np.arange(len(rows))
    test_index = np.arange(len(rows), len(rows) + len(test))
    off_index = np.arange(len(rows) + len(test), len(texts))
    y = np.array([index[r.intent] for r in rows])
    embedded = np.vstack([vectors[t.strip()] for t in texts])
    common: dict[str, Any] = {
        "train_index": train_index,
        "y": y,
        "test_index": test_index,
        "off_index": off_index,
        "labels": labels,
        "test": test,
        "held": held,
    }

    def tfidf_lr(fit_index: np.ndarray, fit_y: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)
        model = LogisticRegression(C=10.0, max_iter=2000)
        model.fit(vectorizer.fit_transform([texts[i] for i in fit_index]), fit_y)
        return lambda idx: _full_proba(
            model, model.predict_proba(vectorizer.transform([texts[i] for i in idx])), labels
        )

    def minilm_lr(fit_index: np.ndarray, fit_y: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        model = LogisticRegression(C=10.0, max_iter=2000)
        model.fit(embedded[fit_index], fit_y)
        return lambda idx: _full_proba(model, model.predict_proba(embedded[idx]), labels)

    def centroid(fit_index: np.ndarray, fit_y: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        centroids = np.zeros((len(labels), embedded.shape[1]), dtype=np.float32)
        for label in np.unique(fit_y):
            mean = embedded[fit_index[fit_y == label]].mean(0)
            centroids[label] = mean / np.linalg.norm(mean)
        return lambda idx: embedded[idx] @ centroids.T

    return {
        "tfidf_logreg": _baseline_run(fit=tfidf_lr, **common),
        "minilm_logreg": _baseline_run(fit=minilm_lr, **common),
        "semantic_router_centroid": _baseline_run(fit=centroid, **common),
    }


def _full_proba(model: Any, proba: np.ndarray, labels: list[str]) -> np.ndarray:
    """Probabilities over every label (a split may miss an intent's examples)."""
    full = np.zeros((proba.shape[0], len(labels)))
    full[:, model.classes_] = proba
    return full


# --- the run ----------------------------------------------------------------------------------


def banking77_evaluate(
    *, variants: tuple[str, ...] = ("fewshot10", "full", "oos"), log: Callable[[str], None] = print
) -> dict[str, Any]:
    """Every variant through the product's path and the baselines. Needs a database
    (a throw-away one: the router's intents are replaced)."""
    from django.conf import settings

    from routing.classifier_training import off_topic_texts
    from routing.example_embeddings import examples_embed

    train, test = rows_load("train"), rows_load("test")
    off_topic = off_topic_texts()
    started = time.perf_counter()
    # Every text embedded once (the product's example cache, which training reuses).
    unique = list(
        dict.fromkeys(
            t.strip() for t in [*(r.text for r in train), *(r.text for r in test), *off_topic]
        )
    )
    cached = _vectors_cache_load(unique)
    log(f"banking77: embedding {len(unique)} texts ({cached} from {CACHE_FILE})")
    matrix = examples_embed(unique)
    _vectors_cache_save(unique, matrix)
    vectors = dict(zip(unique, matrix, strict=True))
    embed_s = time.perf_counter() - started
    test_vectors = np.vstack([vectors[r.text.strip()] for r in test])
    report: dict[str, Any] = {"embedding_seconds": round(embed_s, 1), "variants": {}}
    for name in variants:
        rows, held = variant_rows(name, train)
        log(f"banking77 {name}: {len(rows)} training examples, {len(held)} intents held out")
        product = product_run(name=name, rows=rows, test=test, held=held, test_vectors=test_vectors)
        log(f"  product: {_brief(product)}")
        # The same path with the embedding adapter (routing/encoder.py) switched the
        # other way than the setting, so both are in the same run.
        from django.test import override_settings

        other = not settings.TIERDESK_ROUTER_FINETUNE
        with override_settings(TIERDESK_ROUTER_FINETUNE=other):
            flipped = product_run(
                name=name, rows=rows, test=test, held=held, test_vectors=test_vectors
            )
        flipped_name = "product_adapter" if other else "product_no_adapter"
        log(f"  {flipped_name}: {_brief(flipped)}")
        baselines = baselines_run(
            rows=rows, test=test, held=held, off_topic=off_topic, vectors=vectors
        )
        for baseline, figures in baselines.items():
            figures.pop("predicted")
            log(f"  {baseline}: {_brief(figures)}")
        report["variants"][name] = {
            "held_out_intents": sorted(held),
            "product": product,
            flipped_name: flipped,
            "baselines": baselines,
        }
    report["figures"] = figures_flat(report)
    report["targets"] = TARGETS
    report["verdicts"] = verdicts(report["figures"])
    return report


# The texts' embeddings between runs (13,200 texts take minutes on a loaded machine).
# Only a cache: deleting it changes nothing but the time.
CACHE_FILE = Path(__file__).resolve().parents[2] / "var" / "cache" / "banking77-embeddings.npz"


def _vectors_cache_load(texts: list[str]) -> int:
    from knowledge.embedding import model_name
    from routing.example_embeddings import examples_cache_fill

    if not CACHE_FILE.exists():
        return 0
    data = np.load(CACHE_FILE, allow_pickle=False)
    if str(data["model"]) != model_name():
        return 0
    wanted = set(texts)
    pairs = [
        (t, v) for t, v in zip(data["texts"].tolist(), data["vectors"], strict=True) if t in wanted
    ]
    examples_cache_fill(pairs)
    return len(pairs)


def _vectors_cache_save(texts: list[str], matrix: np.ndarray) -> None:
    from knowledge.embedding import model_name

    CACHE_FILE.parent.mkdir(parents=True, exist_ok=True)
    np.savez(CACHE_FILE, model=np.array(model_name()), texts=np.array(texts), vectors=matrix)


def _brief(figures: dict[str, Any]) -> str:
    keys = ("accuracy", "top1_accuracy", "clarified", "oos_recall", "threshold")
    return ", ".join(f"{k} {figures[k]}" for k in keys if k in figures)


FLAT_KEYS = ("accuracy", "top1_accuracy", "answered_accuracy", "oos_recall", "clarified")


def figures_flat(report: dict[str, Any]) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for name, variant in report["variants"].items():
        products = [(k, v) for k, v in variant.items() if k.startswith("product")]
        for who, figures in [*products, *variant["baselines"].items()]:
            for key in FLAT_KEYS:
                if key in figures:
                    flat[f"banking77_{name}_{who}_{key}"] = figures[key]
        for who, figures in products:
            flat[f"banking77_{name}_{who}_decision_ms_p95"] = figures["decision_ms_p95"]
            retrain = figures["retrain"]
            if "train_seconds" in retrain:
                flat[f"banking77_{name}_{who}_train_seconds"] = retrain["train_seconds"]
    return flat


def verdicts(flat: dict[str, Any]) -> dict[str, bool | None]:
    def get(key: str) -> Any:
        return flat.get(key)

    def at_least(key: str, target: float) -> bool | None:
        value = get(key)
        return None if value is None else value >= target

    oos_recall = at_least("banking77_oos_product_oos_recall", TARGETS["oos_recall_min"])
    oos_in = at_least("banking77_oos_product_accuracy", TARGETS["oos_in_scope_accuracy_min"])
    return {
        "fewshot10_accuracy": at_least(
            "banking77_fewshot10_product_top1_accuracy", TARGETS["fewshot10_accuracy_min"]
        ),
        "full_accuracy": at_least(
            "banking77_full_product_top1_accuracy", TARGETS["full_accuracy_min"]
        ),
        "oos": None if oos_recall is None or oos_in is None else oos_recall and oos_in,
    }
