"""Calibration, the out-of-scope trade-off curve and the embedding features (#17 item 2)."""

from __future__ import annotations

import numpy as np
import pytest
from django.test import Client
from django.urls import reverse

from routing import classifier as classifier_module
from routing.classifier import classifier_samples, classifier_train
from routing.router import route_decide, router_snapshot_get
from routing.services import router_model_train
from routing.versioning import router_version_get


@pytest.mark.usefixtures("seeded")
def test_training_calibrates_and_measures_the_out_of_scope_trade_off() -> None:
    trained = classifier_train(samples=classifier_samples(), embeddings=False)

    calibration = trained.calibration
    assert calibration is not None
    assert calibration["held_out"] > 200
    assert calibration["off_topic"] >= 100
    assert 0.05 <= trained.temperature <= 20
    curve = calibration["curve"]
    assert [p["threshold"] for p in curve] == [round(0.05 * i, 2) for i in range(1, 20)]
    accuracy = [p["in_scope_accuracy"] for p in curve]
    recall = [p["oos_recall"] for p in curve]
    # A higher threshold answers fewer messages and catches more off-topic ones.
    assert accuracy == sorted(accuracy, reverse=True)
    assert recall == sorted(recall)
    assert accuracy[0] > 0.8
    # The shop's own out_of_scope intent already catches much of the generic text.
    assert recall[0] > 0.3
    assert calibration["suggested_threshold"] in [p["threshold"] for p in curve]


@pytest.mark.django_db
def test_two_intent_shops_get_real_probabilities() -> None:
    # scikit-learn's binary model has one row of weights; read as one intent's, every
    # message went to the first intent with probability 1.
    samples = [
        ("do gift cards expire", "gift_card"),
        ("how long is a gift card valid", "gift_card"),
        ("can I reload my gift card", "gift_card"),
        ("when do you open", "store_hours"),
        ("what are your opening hours", "store_hours"),
        ("are you open on sunday", "store_hours"),
    ]
    trained = classifier_train(samples=samples, embeddings=False, calibrate=False)

    gift = trained.predict(text="does my gift card expire")
    hours = trained.predict(text="are you open on saturday")

    assert gift[0][0] == "gift_card"
    assert hours[0][0] == "store_hours"
    assert 0.5 < hours[0][1] < 1.0
    assert abs(sum(p for _, p in hours) - 1.0) < 1e-9


@pytest.mark.usefixtures("seeded")
def test_admin_shows_the_curve_with_the_point_in_use(admin_client: Client) -> None:
    router_model_train(version=router_version_get().version)

    body = admin_client.get(reverse("admin:routing_intent_retraining")).content.decode()

    assert 'id="oos-curve"' in body
    assert "Suggested: <strong>" in body
    # TIERDESK_ROUTER_CLARIFY_THRESHOLD = 0.45 is a point of the grid: marked in use.
    assert '<tr style="font-weight:bold"><td>0.45</td>' in body


@pytest.mark.models
@pytest.mark.django_db
def test_embedding_features_route_and_reuse_the_example_cache() -> None:
    from routing.interchange import intents_import

    intents_import(
        "intent,tier,text\n"
        "gift_card,L2,do gift cards expire\n"
        "gift_card,L2,how long is a gift card valid\n"
        "gift_card,L2,can I top up a gift voucher\n"
        "store_hours,L1,when do you open\n"
        "store_hours,L1,what are your opening hours\n"
        "store_hours,L1,are you open on sunday\n"
        "weather,L3,will it rain tomorrow\n"
        "weather,L3,is it sunny outside\n"
        "weather,L3,what's the forecast\n",
        fmt="csv",
        default_language="en",
    )
    samples = classifier_samples()
    trained = classifier_train(samples=samples, embeddings=True)
    assert trained.embedding_dim == 384
    cached = len(classifier_module._example_vectors)
    classifier_train(samples=samples, embeddings=True)
    assert len(classifier_module._example_vectors) == cached  # nothing embedded again

    with pytest.raises(ValueError, match="embedding"):
        trained.predict(text="when do you close")
    snapshot = router_snapshot_get()
    from dataclasses import replace

    decision = route_decide(
        # No word in common with the examples: the embedding carries it.
        text="What time does the shop shut tonight?",
        language="en",
        snapshot=replace(snapshot, classifier=trained),
        clarify_threshold=0.0,
    )
    assert decision.intent == "store_hours"
    assert np.isfinite(decision.confidence)
    # The English MiniLM's Chinese embeddings are noise: Chinese gets zeros, TF-IDF decides.
    from routing.classifier import message_embedding

    assert not message_embedding("我的订单到哪了").any()
    assert message_embedding("where is my order").any()
