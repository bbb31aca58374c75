"""Calibration, the out-of-scope trade-off curve and the embedding features."""

from __future__ import annotations

import numpy as np
import pytest
from django.test import Client
from django.urls import reverse

from routing import classifier_fit, example_embeddings
from routing.classifier_training import classifier_samples, classifier_train
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
    assert [p["threshold"] for p in curve] == [round(0.025 * i, 3) for i in range(1, 40)]
    accuracy = [p["in_scope_accuracy"] for p in curve]
    recall = [p["oos_recall"] for p in curve]
    # A higher threshold answers fewer messages and catches more off-topic ones.
    assert accuracy == sorted(accuracy, reverse=True)
    assert recall == sorted(recall)
    assert accuracy[0] > 0.8
    # The shop's own out_of_scope intent already catches much of the generic text; the
    # examples of the intents left out of the calibration model (a quarter, never
    # out_of_scope) stand in for questions near the shop's domain that it doesn't cover.
    assert curve[0]["off_topic_recall"] > 0.3
    assert calibration["unseen_intents"] == round(len(trained.intents) * 0.25)
    assert calibration["unseen_examples"] > 50
    assert curve[-1]["unseen_intents_recall"] > curve[0]["unseen_intents_recall"]
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
    cached = len(example_embeddings.example_cache)
    classifier_train(samples=samples, embeddings=True)
    assert len(example_embeddings.example_cache) == cached  # nothing embedded again

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


@pytest.mark.usefixtures("seeded")
def test_admin_picks_a_point_of_the_curve_and_routing_applies_it(admin_client: Client) -> None:
    from routing.models import OutOfScopePoint
    from routing.types import CLARIFY

    router_model_train(version=router_version_get().version)
    page = admin_client.get(reverse("admin:routing_intent_retraining")).content.decode()
    assert 'id="oos-chart"' in page  # the clickable curve
    assert 'class="oos-point" data-threshold="0.9"' in page
    # A message the classifier answers under the setting (0.45), but not confidently.
    candidates = ["can i get it in another colour", "what about the blue one", "is it any good"]
    decisions = [
        route_decide(text=t, language="en", snapshot=router_snapshot_get()) for t in candidates
    ]
    message, before = next(
        (t, d) for t, d in zip(candidates, decisions, strict=True) if 0.45 <= d.confidence < 0.9
    )
    assert before.tier != CLARIFY

    response = admin_client.post(
        reverse("admin:routing_intent_oos_point"), {"threshold": "0.9"}, follow=True
    )

    body = response.content.decode()
    assert "Out-of-scope threshold set to 0.90" in body
    assert '<tr style="font-weight:bold"><td>0.9</td>' in body  # now marked in use
    chosen = OutOfScopePoint.objects.get()
    assert chosen.threshold == 0.9 and chosen.chosen_by == "admin"
    assert chosen.in_scope_accuracy is not None and chosen.oos_recall is not None
    # The save bumped the router version: the next snapshot applies the point.
    snapshot = router_snapshot_get()
    assert snapshot.clarify_threshold == 0.9
    after = route_decide(text=message, language="en", snapshot=snapshot)
    assert after.tier == CLARIFY and after.reason["threshold"] == 0.9
    # A gray release's threshold still overrides the admin's point.
    override = route_decide(text=message, language="en", snapshot=snapshot, clarify_threshold=0.0)
    assert override.tier != CLARIFY
    # Only points of the curve are accepted.
    bad = admin_client.post(
        reverse("admin:routing_intent_oos_point"), {"threshold": "0.33"}, follow=True
    )
    assert "Choose one of the points" in bad.content.decode()
    assert OutOfScopePoint.objects.count() == 1


@pytest.mark.models
@pytest.mark.django_db
def test_embedding_only_when_unsure_nearest_example_score_and_disk_cache(
    monkeypatch: pytest.MonkeyPatch, settings: object, tmp_path: object
) -> None:
    """The in-scope score weighs the nearest example; a message
    the TF-IDF-only model is sure of is decided without its embedding; a new process
    retrains from the disk cache of example embeddings."""
    from dataclasses import replace

    from knowledge import embedding as embedding_module
    from routing.interchange import intents_import

    settings.VAR_DIR = tmp_path  # type: ignore[attr-defined]
    intents_import(
        "intent,tier,text\n"
        "store_hours,L1,when do you open\n"
        "store_hours,L1,what are your opening hours\n"
        "store_hours,L1,are you open on sunday\n"
        "store_hours,L1,what time do you close\n"
        "returns,L1,how do i return a jacket\n"
        "returns,L1,i want to send the shoes back\n"
        "returns,L1,return this item please\n"
        "returns,L1,can i give back the lamp\n",
        fmt="csv",
        default_language="en",
    )
    samples = classifier_samples()
    example_embeddings.example_cache.clear()  # as in a new process: all go to disk
    trained = classifier_train(samples=samples, embeddings=True)
    assert trained.oos_weights is not None and trained.example_vectors is not None
    assert trained.oos_weights[1] > 0  # nearer an example: more in scope
    near = embedding_module.embed_query("what are your opening hours on sunday")
    far = embedding_module.embed_query("who won the football world cup in 1998")
    assert trained.in_scope_score(top_probability=0.9, embedding=near) > trained.in_scope_score(
        top_probability=0.9, embedding=far
    )
    if trained.tfidf_weights is None:
        # On so few examples the calibration fold found no safe cut (none is stored
        # then): fit the TF-IDF-only model here to drive the router's fast path.
        from routing.classifier import features_text
        from routing.normalise import text_normalise

        x = trained.vectorizer.transform([features_text(text_normalise(t)) for t, _ in samples])
        labels = np.array([trained.intents.index(intent) for _, intent in samples])
        weights, bias = classifier_fit.weights_of(classifier_fit.tfidf_fit(x, labels))
        trained = replace(trained, tfidf_weights=weights, tfidf_bias=bias, tfidf_temperature=1.0)

    snapshot = replace(router_snapshot_get(), classifier=replace(trained, embed_below=0.0))
    text = "are you open on sunday"
    embedding_module._query_cache.clear()
    quick = route_decide(text=text, language="en", snapshot=snapshot, clarify_threshold=0.0)
    assert quick.intent == "store_hours" and quick.reason["embedded"] is False
    assert not embedding_module._query_cache  # no forward pass for this message
    slow = route_decide(
        text=text,
        language="en",
        snapshot=replace(snapshot, classifier=replace(trained, embed_below=1.01)),
        clarify_threshold=0.0,
    )
    assert slow.intent == "store_hours" and slow.reason["embedded"] is True
    # A point of the out-of-scope curve applies to the in-scope score; the setting's
    # (or a release's) threshold to the top probability, as before. (A model without
    # the shop's calibrated score, as stored before it: tests/routing/test_oos_calibration.py.)
    always_embed = replace(snapshot, classifier=replace(trained, embed_below=None, oos_scorer=None))
    question = "who won the football world cup in 1998"
    plain, on_curve = (
        route_decide(
            text=question,
            language="en",
            snapshot=always_embed,
            clarify_threshold=0.0,
            curve_threshold=curve,
        )
        for curve in (False, True)
    )
    assert plain.confidence == pytest.approx(plain.reason["top"][0][1], abs=1e-4)
    assert on_curve.confidence == pytest.approx(
        trained.in_scope_score(top_probability=plain.confidence, embedding=far)
    )
    assert on_curve.confidence < plain.confidence

    # A new worker process: nothing in memory; the examples come from the disk cache.
    example_embeddings.example_cache.clear()
    calls: list[int] = []
    real = embedding_module.embed_texts

    def counting(texts: list[str], **kwargs: object) -> np.ndarray:
        calls.append(len(texts))
        return real(texts, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(embedding_module, "embed_texts", counting)
    again = classifier_train(samples=samples, embeddings=True)
    assert calls == []
    assert np.allclose(again.weights, trained.weights)
