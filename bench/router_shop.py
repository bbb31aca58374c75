"""A new shop's own intents through the product's import and retrain path, beside two
plain baselines in the same run (``make eval-router-shop SHOP=pawpantry``).

The shop's set (bench/sets/router/<shop>/): ``intents.json`` in the
``tierdesk-intents/1`` format, each intent with the order-system operation it maps to
(``order_flow``), and ``test.tsv`` (``intent``, ``language``, ``text``; ``oos``: fits
no intent). An intent with an order flow is imported under that flow's name, which is
how a shop wires its intent to the product's L1 flow; the others keep their names.

The router decides every test message as it would live (``route_decide`` on the
snapshot the retrain service stored, the shop's calibrated out-of-scope point): no
threshold is chosen on the test messages. Figures:

- in-scope accuracy: right intent, a clarifying question counted wrong;
- out-of-scope recall: ``oos`` messages that go to no intent (clarify);
- off-topic -> order flow: ``oos`` messages routed to an intent that starts an order
  flow (``routing.types.ORDER_INTENTS``: "Which order?").

Baselines (TF-IDF + LR, MiniLM + LR, bench/banking77.py): fitted on the same
examples, their threshold from the product's calibration split of the training
examples and generic off-topic text.
"""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench.banking77 import Row, baselines_run

SETS_DIR = Path(__file__).resolve().parent / "sets" / "router"
OOS = "oos"
TARGETS = {"oos_recall_min": 0.80, "in_scope_accuracy_min": 0.85, "oos_to_order_flow_max": 0.03}


def shop_load(shop: str) -> tuple[dict[str, Any], list[tuple[str, str, str]], dict[str, str]]:
    """(the intents file with order-flow intents renamed, the test lines as (intent,
    language, text) under the same names, the renaming)."""
    folder = SETS_DIR / shop
    if not (folder / "intents.json").exists():
        raise FileNotFoundError(f"no router set {folder}: want intents.json and test.tsv")
    data = json.loads((folder / "intents.json").read_text(encoding="utf-8"))
    renamed = {i["name"]: i.get("order_flow") or i["name"] for i in data["intents"]}
    intents = []
    for intent in data["intents"]:
        intent = {k: v for k, v in intent.items() if k != "order_flow"}
        intent["name"] = renamed[intent["name"]]
        intents.append(intent)
    with (folder / "test.tsv").open(encoding="utf-8", newline="") as handle:
        test = [
            (renamed.get(r["intent"], r["intent"]), r["language"], r["text"])
            for r in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        ]
    return {**data, "intents": intents}, test, renamed


def product_run(
    *, bundle: dict[str, Any], test: list[tuple[str, str, str]], vectors: np.ndarray
) -> dict[str, Any]:
    from routing.interchange import intents_import
    from routing.models import Intent, OutOfScopePoint
    from routing.router import route_decide, router_snapshot_get
    from routing.services import router_model_train
    from routing.types import CLARIFY
    from routing.versioning import router_caches_expire, router_version_get

    Intent.objects.all().delete()
    OutOfScopePoint.objects.all().delete()
    intents_import(json.dumps(bundle), fmt="json", default_language="auto")
    trained = router_model_train(version=router_version_get().version, trained_by="eval")
    router_caches_expire()
    snapshot = router_snapshot_get()
    classifier = snapshot.classifier
    assert classifier is not None
    predicted: list[str | None] = []
    tiers: list[str] = []
    latencies = []
    for (_, language, text), vector in zip(test, vectors, strict=True):
        started = time.perf_counter()
        decision = route_decide(
            text=text,
            language=language,
            snapshot=snapshot,
            embedding=vector if classifier.embedding_dim else None,
        )
        latencies.append((time.perf_counter() - started) * 1000)
        predicted.append(None if decision.tier == CLARIFY else decision.intent)
        tiers.append(decision.tier)
    report = figures_of(predicted, test)
    report.update(
        {
            "retrain": trained,
            "calibration": {
                k: v for k, v in (classifier.calibration or {}).items() if k != "curve"
            },
            "curve": (classifier.calibration or {}).get("curve"),
            "decision_ms_p50": round(float(np.percentile(latencies, 50)), 3),
            "decision_ms_p95": round(float(np.percentile(latencies, 95)), 3),
            "oos_tiers": {
                tier: sum(
                    1 for t, (i, _, _) in zip(tiers, test, strict=True) if i == OOS and t == tier
                )
                for tier in sorted(set(tiers))
            },
        }
    )
    return report


def figures_of(predicted: list[str | None], test: list[tuple[str, str, str]]) -> dict[str, Any]:
    from routing.types import ORDER_INTENTS

    out: dict[str, Any] = {}
    for language in ("all", "en", "zh"):
        rows = [(p, t) for p, t in zip(predicted, test, strict=True) if language in ("all", t[1])]
        in_scope = [(p, t) for p, t in rows if t[0] != OOS]
        oos = [p for p, t in rows if t[0] == OOS]
        suffix = "" if language == "all" else f"_{language}"
        out[f"in_scope_accuracy{suffix}"] = round(
            sum(p == t[0] for p, t in in_scope) / max(len(in_scope), 1), 4
        )
        out[f"oos_recall{suffix}"] = round(sum(p is None for p in oos) / max(len(oos), 1), 4)
        out[f"oos_to_order_flow{suffix}"] = round(
            sum(p in ORDER_INTENTS for p in oos) / max(len(oos), 1), 4
        )
    in_all = [(p, t) for p, t in zip(predicted, test, strict=True) if t[0] != OOS]
    out["in_scope_clarified"] = round(sum(p is None for p, _ in in_all) / max(len(in_all), 1), 4)
    out["accuracy"] = round(
        sum(
            (p is None) if t[0] == OOS else (p == t[0])
            for p, t in zip(predicted, test, strict=True)
        )
        / len(test),
        4,
    )
    out["messages"] = len(test)
    out["oos_messages"] = sum(t[0] == OOS for t in test)
    return out


def shop_evaluate(shop: str, *, log: Callable[[str], None] = print) -> dict[str, Any]:
    """The product and the baselines on one shop's set. Needs a throw-away database:
    the router's intents are replaced."""
    from routing.classifier_training import off_topic_texts
    from routing.example_embeddings import examples_embed

    bundle, test, _ = shop_load(shop)
    rows = [
        Row(text, intent["name"])
        for intent in bundle["intents"]
        for texts in intent["utterances"].values()
        for text in texts
    ]
    off_topic = off_topic_texts()
    texts = list(
        dict.fromkeys(
            t.strip() for t in [*(r.text for r in rows), *(t[2] for t in test), *off_topic]
        )
    )
    matrix = examples_embed(texts)
    vectors = dict(zip(texts, matrix, strict=True))
    test_vectors = np.vstack([vectors[t[2].strip()] for t in test])
    product = product_run(bundle=bundle, test=test, vectors=test_vectors)
    log(f"{shop} product: {_brief(product)}")
    report: dict[str, Any] = {"shop": shop, "product": product, "baselines": {}}
    test_rows = [Row(t[2], t[0]) for t in test]
    baselines = baselines_run(
        rows=rows, test=test_rows, held={OOS}, off_topic=off_topic, vectors=vectors
    )
    for name in ("tfidf_logreg", "minilm_logreg"):
        # Re-scored the shop's way (order flows, per language) from the same predictions.
        predicted = baselines[name].pop("predicted")
        figures = figures_of(predicted, test)
        figures["threshold"] = baselines[name]["threshold"]
        report["baselines"][name] = figures
        log(f"{shop} {name}: {_brief(figures)}")
    report["figures"] = figures_flat(shop, report)
    report["targets"] = TARGETS
    report["verdicts"] = {
        "oos": product["oos_recall"] >= TARGETS["oos_recall_min"]
        and product["in_scope_accuracy"] >= TARGETS["in_scope_accuracy_min"],
        "order_flow": product["oos_to_order_flow"] <= TARGETS["oos_to_order_flow_max"],
    }
    return report


FLAT_KEYS = (
    "in_scope_accuracy",
    "in_scope_accuracy_en",
    "in_scope_accuracy_zh",
    "oos_recall",
    "oos_recall_en",
    "oos_recall_zh",
    "oos_to_order_flow",
    "accuracy",
    "in_scope_clarified",
)


def figures_flat(shop: str, report: dict[str, Any]) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for who, figures in [("product", report["product"]), *report["baselines"].items()]:
        for key in FLAT_KEYS:
            flat[f"router_{shop}_{who}_{key}"] = figures[key]
    flat[f"router_{shop}_product_decision_ms_p95"] = report["product"]["decision_ms_p95"]
    return flat


def _brief(figures: dict[str, Any]) -> str:
    keys = ("in_scope_accuracy", "oos_recall", "oos_to_order_flow", "accuracy", "threshold")
    return ", ".join(f"{k} {figures[k]}" for k in keys if k in figures)
