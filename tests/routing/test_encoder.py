"""The router's embedding adapter (routing/encoder.py): SetFit-style contrastive
training on the shop's examples through the retrain path."""

from __future__ import annotations

import csv
import io
from typing import Any

import numpy as np
import pytest

from knowledge.embedding import embed_texts
from routing.encoder import adapter_apply, adapter_fit

# Three intents whose examples share few words; the queries are phrased apart from them.
EXAMPLES = {
    "card_lost": [
        "I lost my card",
        "my card was stolen yesterday",
        "can't find my bank card anywhere",
        "someone took my wallet with the card",
        "please block my missing card",
        "I think I dropped my debit card",
        "card gone, what do I do",
        "freeze my card, it's lost",
    ],
    "exchange_rate": [
        "what rate do you use to convert euros",
        "how much is a dollar in pounds today",
        "which exchange rate applies to my transfer",
        "is the currency conversion rate fair",
        "why did I get a bad rate abroad",
        "show me today's euro rate",
        "how are foreign currency amounts converted",
        "conversion rate for yen",
    ],
    "top_up_failed": [
        "my top up didn't go through",
        "adding money to my account failed",
        "the top-up was declined",
        "why can't I load money onto the account",
        "top up keeps failing",
        "I tried to add funds but it was rejected",
        "my deposit by card did not work",
        "topping up returns an error",
    ],
}
QUERIES = [
    ("where has my plastic gone, I can't locate it", "card_lost"),
    ("help, my visa is missing", "card_lost"),
    ("what's the price of swiss francs in your app", "exchange_rate"),
    ("how many pounds will 100 dollars give me", "exchange_rate"),
    ("the money I put in never arrived", "top_up_failed"),
    ("loading funds shows an error message", "top_up_failed"),
]


def _samples() -> list[tuple[str, str]]:
    return [(text, intent) for intent, texts in EXAMPLES.items() for text in texts]


def _margin(vectors: np.ndarray, labels: list[str], queries: np.ndarray) -> float:
    """Mean over queries of (cosine to own intent's centroid - to the nearest other)."""
    names = sorted(EXAMPLES)
    centroids = np.vstack(
        [vectors[[i for i, lab in enumerate(labels) if lab == n]].mean(0) for n in names]
    )
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
    sims = queries @ centroids.T
    margins = []
    for row, (_, intent) in zip(sims, QUERIES, strict=True):
        own = names.index(intent)
        margins.append(row[own] - np.delete(row, own).max())
    return float(np.mean(margins))


@pytest.mark.models
def test_the_adapter_separates_the_shops_intents(settings: Any) -> None:
    settings.TIERDESK_ROUTER_FINETUNE_BUDGET_S = 60.0
    samples = _samples()
    texts, labels = [t for t, _ in samples], [i for _, i in samples]
    vectors, queries = embed_texts(texts), embed_texts([q for q, _ in QUERIES])

    weight = adapter_fit(vectors, np.array(labels))

    assert weight is not None and weight.shape == (384, 384)
    before = _margin(vectors, labels, queries)
    after = _margin(adapter_apply(weight, vectors), labels, adapter_apply(weight, queries))
    # Queries never trained on sit closer to their own intent than before.
    assert after > before + 0.05, (before, after)
    adapted = adapter_apply(weight, queries)
    assert np.allclose(np.linalg.norm(adapted, axis=1), 1.0, atol=1e-5)
    # A message without an embedding (Chinese: zeros) stays without one.
    assert not adapter_apply(weight, np.zeros(384, dtype=np.float32)).any()
    # Deterministic: a retrain on the same examples gives the same adapter.
    again = adapter_fit(vectors, np.array(labels))
    assert again is not None and np.allclose(weight, again, atol=1e-5)
    # One intent (or one example an intent) has no positives: nothing to adapt.
    assert adapter_fit(vectors[:8], np.array(labels[:8])) is None


@pytest.mark.models
@pytest.mark.django_db
def test_the_retrain_task_trains_the_adapter_and_routing_uses_it(settings: Any) -> None:
    from routing.classifier_training import classifier_samples, classifier_samples_hash
    from routing.interchange import intents_import
    from routing.models import ClassifierModel
    from routing.router import route_decide, router_snapshot_get
    from routing.services import router_model_train
    from routing.versioning import router_caches_expire, router_version_get

    settings.TIERDESK_ROUTER_EMBEDDINGS = True
    settings.TIERDESK_ROUTER_FINETUNE = True
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(
        [["intent", "tier", "text"], *([i, "L3", t] for t, i in _samples())]
    )
    intents_import(out.getvalue(), fmt="csv", default_language="en")
    version = router_version_get().version

    assert router_model_train(version=version)["outcome"] == "trained"

    router_caches_expire()
    snapshot = router_snapshot_get()
    classifier = snapshot.classifier
    assert classifier is not None and classifier.adapter is not None
    assert classifier.calibration is not None and classifier.calibration["curve"]
    # Stored keyed apart from the model without the adapter.
    samples = classifier_samples()
    assert ClassifierModel.objects.filter(data_hash=classifier_samples_hash(samples)).exists()
    assert classifier_samples_hash(samples) != classifier_samples_hash(samples, finetune=False)
    for query, intent in QUERIES:
        decision = route_decide(text=query, language="en", snapshot=snapshot, clarify_threshold=0.0)
        assert decision.intent == intent, (query, decision)
    # The stored examples are the adapted ones, and the message is adapted the same way.
    shipped = embed_texts([texts for texts, _ in samples])
    stored = classifier.example_vectors
    assert stored is not None
    assert np.allclose(stored, adapter_apply(classifier.adapter, shipped), atol=2e-3)
    assert not np.allclose(stored, shipped, atol=2e-3)

    # Idempotent: the task again (a redelivery) trains nothing.
    assert router_model_train(version=version)["outcome"] == "unchanged"
