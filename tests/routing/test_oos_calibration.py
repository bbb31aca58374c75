"""A shop's own out-of-scope score: calibrated at retraining over leave-intents-out
folds, read by the embedder of the message's language, applied by default, and
stricter for intents that start an order flow."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from django.test import Client, override_settings
from django.urls import reverse

from routing.classifier_training import classifier_samples, classifier_train
from routing.interchange import intents_import
from routing.oos_score import E5, MINILM
from routing.router import route_decide, router_snapshot_get
from routing.services import router_model_train
from routing.types import CLARIFY, ORDER_INTENTS
from routing.versioning import router_version_get

# A small bilingual shop in the tierdesk-intents/1 format: two order flows, three of
# its own intents.
SHOP = {
    "format": "tierdesk-intents/1",
    "intents": [
        {
            "name": "order_status",
            "tier": "L1",
            "utterances": {
                "en": [
                    "where is my order",
                    "track my parcel",
                    "has my order shipped",
                    "tracking has not moved in days",
                    "is my package on the way",
                    "any news on my delivery",
                ],
                "zh": [
                    "我的订单到哪了",
                    "查一下物流",
                    "发货了吗",
                    "物流没更新",
                    "包裹在路上吗",
                    "快递到哪了",
                ],
            },
        },
        {
            "name": "cancel_order",
            "tier": "L1",
            "utterances": {
                "en": [
                    "cancel my order",
                    "i want to cancel what i bought",
                    "please stop my order before it ships",
                    "call off my purchase",
                    "cancel order please",
                    "i ordered by mistake, cancel it",
                ],
                "zh": [
                    "取消订单",
                    "我不要了帮我取消",
                    "发货前取消",
                    "下错单了取消",
                    "订单取消一下",
                    "能取消吗",
                ],
            },
        },
        {
            "name": "grooming",
            "tier": "L2",
            "utterances": {
                "en": [
                    "book a grooming appointment for my dog",
                    "do you trim cat claws",
                    "how much is a dog bath and haircut",
                    "can the groomer come to my house",
                    "reschedule my grooming visit",
                    "is there a grooming slot on saturday",
                ],
                "zh": [
                    "预约狗狗美容",
                    "给猫剪指甲吗",
                    "洗澡剪毛多少钱",
                    "美容师能上门吗",
                    "改美容时间",
                    "周六有美容名额吗",
                ],
            },
        },
        {
            "name": "gift_cards",
            "tier": "L2",
            "utterances": {
                "en": [
                    "do you sell gift cards",
                    "check my gift card balance",
                    "does the gift card expire",
                    "send a gift card by email",
                    "can i pay with two gift cards",
                    "lost my gift card code",
                ],
                "zh": [
                    "有礼品卡吗",
                    "查礼品卡余额",
                    "礼品卡会过期吗",
                    "电子礼品卡",
                    "两张礼品卡一起用",
                    "礼品卡码丢了",
                ],
            },
        },
        {
            "name": "autoship",
            "tier": "L2",
            "utterances": {
                "en": [
                    "set up autoship for dog food",
                    "how does the food subscription work",
                    "skip next autoship delivery",
                    "change how often autoship comes",
                    "is there a discount on autoship",
                    "pause my subscription",
                ],
                "zh": [
                    "设置自动续订狗粮",
                    "订阅怎么用",
                    "跳过下次自动配送",
                    "改配送频率",
                    "自动续订有折扣吗",
                    "暂停订阅",
                ],
            },
        },
    ],
}


@pytest.fixture
def shop(db: None) -> None:
    intents_import(json.dumps(SHOP), fmt="json")


@pytest.mark.usefixtures("shop")
def test_the_score_is_calibrated_per_shop_over_folds_in_both_languages() -> None:
    trained = classifier_train(samples=classifier_samples(), embeddings=True)

    scorer = trained.oos_scorer
    calibration = trained.calibration
    assert scorer is not None and calibration is not None
    assert calibration["folds"] == 4
    rows = calibration["calibration_rows"]
    assert rows["held"] > 0 and rows["unseen_intents"] > 0 and rows["off_topic"] >= 100
    # English is read by MiniLM, Chinese by the multilingual e5: each its own weights.
    assert set(scorer.views) == {MINILM, E5}
    assert set(calibration["score_weights"]) == {MINILM, E5}
    curve = calibration["curve"]
    recall = [p["oos_recall"] for p in curve]
    assert recall == sorted(recall)
    assert calibration["suggested_threshold"] == scorer.threshold
    assert scorer.threshold in [p["threshold"] for p in curve]
    assert scorer.order_threshold >= scorer.threshold
    assert calibration["order_threshold"] == scorer.order_threshold

    snapshot = replace(router_snapshot_get(), classifier=trained)
    for near, far, language in (
        ("where is my parcel now", "who won the football world cup in 1998", "en"),
        ("我的包裹到哪了", "明天北京会下雨吗", "zh"),
    ):
        in_scope, off_topic = (
            route_decide(text=text, language=language, snapshot=snapshot) for text in (near, far)
        )
        assert in_scope.intent == "order_status", (language, in_scope)
        assert off_topic.tier == CLARIFY, (language, off_topic)
        assert in_scope.confidence > off_topic.confidence


@pytest.mark.usefixtures("shop")
def test_an_unsure_order_guess_asks_and_never_starts_the_order_flow() -> None:
    trained = classifier_train(samples=classifier_samples(), embeddings=True)
    assert trained.oos_scorer is not None
    # Every message passes the shop's point, but no order intent reaches its own.
    strict = replace(trained.oos_scorer, threshold=0.0, order_threshold=1.0)
    snapshot = replace(router_snapshot_get(), classifier=replace(trained, oos_scorer=strict))

    order = route_decide(text="cancel my order please", language="en", snapshot=snapshot)
    other = route_decide(text="book my dog a grooming slot", language="en", snapshot=snapshot)

    assert order.tier == CLARIFY and order.reason["candidate"] in ORDER_INTENTS
    assert order.reason["threshold"] == 1.0
    assert other.intent == "grooming" and other.tier == "L2"


@pytest.mark.usefixtures("shop")
@override_settings(TIERDESK_ROUTER_EMBEDDINGS=True)
def test_retrain_page_shows_the_shops_own_curve_and_point(admin_client: Client) -> None:
    router_model_train(version=router_version_get().version)
    snapshot = router_snapshot_get()
    assert snapshot.classifier is not None and snapshot.classifier.oos_scorer is not None

    body = admin_client.get(reverse("admin:routing_intent_retraining")).content.decode()

    assert 'id="oos-shop-calibration"' in body and 'id="oos-curve"' in body
    threshold = snapshot.classifier.oos_scorer.threshold
    assert f'<strong id="oos-in-use">{threshold}</strong>' in body
    assert "this shop&#x27;s own point" in body or "this shop's own point" in body
