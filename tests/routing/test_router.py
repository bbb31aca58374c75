from __future__ import annotations

import pytest
from django.db.models import F
from django.test import override_settings

from routing import versioning
from routing.models import Intent, RouterVersion, Rule, SlotPattern, Utterance
from routing.router import language_detect, route_message
from routing.types import (
    ACCOUNT_HELP,
    CANCEL_ORDER,
    CHANGE_ADDRESS,
    CLARIFY,
    COMPLEX_QUESTION,
    DELIVERY_TIME,
    GREETING,
    KNOWLEDGE_QUESTION,
    L1,
    L2,
    L3,
    ORDER_STATUS,
    OUT_OF_SCOPE,
    REFUND_STATUS,
    SHIPPING_COST,
)

pytestmark = pytest.mark.usefixtures("seeded")


def test_order_status_with_order_id_slot() -> None:
    decision = route_message(text="where is my order #W2611340", language="en")

    assert (decision.tier, decision.intent) == (L1, ORDER_STATUS)
    assert decision.slots == {"order_id": "#W2611340"}
    assert decision.reason["kind"] == "classifier"
    assert decision.reason["top"][0][0] == ORDER_STATUS
    assert decision.confidence >= 0.45
    assert decision.elapsed_ms > 0


def test_chinese_order_status_without_segmentation() -> None:
    decision = route_message(text="我的订单W2611340到哪了", language="zh")

    assert (decision.tier, decision.intent) == (L1, ORDER_STATUS)
    assert decision.slots["order_id"] == "#W2611340"


@pytest.mark.parametrize(
    "text", ["#W2611340?", "W2611340", "w2611340", "order # w2611340", "订单号：W2611340"]
)
def test_bare_order_id_is_order_status_by_rule(text: str) -> None:
    decision = route_message(text=text, language="en")

    assert (decision.tier, decision.intent) == (L1, ORDER_STATUS)
    assert decision.reason == {
        "kind": "rule",
        "rule": "bare-order-id",
        "rule_kind": "regex",
        "match": decision.reason["match"],
        "matches": 1,
    }
    assert decision.slots["order_id"] == "#W2611340"


# Phrasings that are not in the seed data: the classifier has to generalise.
@pytest.mark.parametrize(
    ("text", "language", "intent"),
    [
        ("pls cancel order #W4817420, i bought it by mistake", "en", CANCEL_ORDER),
        ("帮我把订单W4817420取消了吧", "zh", CANCEL_ORDER),
        ("i need to change the shipping address on my order", "en", CHANGE_ADDRESS),
        ("订单的收货地址要改一下", "zh", CHANGE_ADDRESS),
        ("my refund still hasn't come through", "en", REFUND_STATUS),
        ("退款怎么还没到账啊", "zh", REFUND_STATUS),
        ("how much do you charge to ship an order", "en", SHIPPING_COST),
        ("你们的运费怎么收", "zh", SHIPPING_COST),
        ("i forgot my password and can't log in", "en", ACCOUNT_HELP),
        ("密码忘了，登录不上", "zh", ACCOUNT_HELP),
        ("when is my package going to arrive", "en", DELIVERY_TIME),
        ("我的订单大概几天能送到", "zh", DELIVERY_TIME),
        ("hello!", "en", GREETING),
        ("谢谢你，再见", "zh", GREETING),
    ],
)
def test_l1_intents_in_both_languages(text: str, language: str, intent: str) -> None:
    decision = route_message(text=text, language=language)

    assert (decision.tier, decision.intent) == (L1, intent), decision.reason


@pytest.mark.parametrize(
    "text",
    [
        "which is better for travel, the action camera or the digital camera?",
        "Wireless earbuds vs headphones for the gym",
        "降噪耳机和无线耳机哪个更好",
    ],
)
def test_comparison_goes_to_l3_by_rule(text: str) -> None:
    decision = route_message(text=text, language=language_detect(text))

    assert (decision.tier, decision.intent) == (L3, COMPLEX_QUESTION)
    assert decision.reason["kind"] == "rule"
    assert decision.reason["rule"] == "comparison"


def test_several_questions_in_one_message_go_to_l3() -> None:
    decision = route_message(
        text="Where is my order #W2611340? Can I still change the address? Why the extra fee?",
        language="en",
    )

    assert (decision.tier, decision.intent) == (L3, COMPLEX_QUESTION)
    assert decision.reason["rule"] == "several-questions"
    assert decision.reason["matches"] == 3
    # Slots are extracted whatever the tier, so the large model gets them too.
    assert decision.slots["order_id"] == "#W2611340"


@pytest.mark.parametrize(
    ("text", "language"),
    [
        # (Without "i want a manager": that asks for a person.)
        ("this is ridiculous, worst service ever, i want my money back", "en"),
        ("太离谱了，我要投诉你们", "zh"),
    ],
)
def test_angry_complaint_goes_to_l3_by_keyword_density(text: str, language: str) -> None:
    decision = route_message(text=text, language=language)

    assert (decision.tier, decision.intent) == (L3, COMPLEX_QUESTION)
    assert decision.reason["rule"] == "angry-complaint"
    assert decision.reason["density"] >= 0.1


def test_keyword_must_be_a_whole_word() -> None:
    # "sue" is a complaint keyword; "issue" must not count as one.
    decision = route_message(text="i have an issue logging in to my account", language="en")

    assert decision.reason["kind"] != "rule"
    assert (decision.tier, decision.intent) == (L1, ACCOUNT_HELP)


@pytest.mark.parametrize(
    "text",
    [
        "can I machine wash the fleece jacket, and at what temperature?",
        "这件夹克可以用洗衣机洗吗",
    ],
)
def test_care_question_goes_to_knowledge_tier(text: str) -> None:
    decision = route_message(text=text, language=language_detect(text))

    assert (decision.tier, decision.intent) == (L2, KNOWLEDGE_QUESTION), decision.reason
    assert decision.reason["kind"] == "classifier"


@pytest.mark.parametrize("text", ["what's the weather tomorrow", "明天会下雨吗"])
def test_off_topic_gets_a_clarifying_question(text: str) -> None:
    decision = route_message(text=text, language=language_detect(text))

    assert (decision.tier, decision.intent) == (CLARIFY, OUT_OF_SCOPE)
    assert decision.reason["kind"] == "clarify"
    assert decision.reason["top"][0][0] == OUT_OF_SCOPE


def test_low_confidence_asks_instead_of_guessing() -> None:
    with override_settings(TIERDESK_ROUTER_CLARIFY_THRESHOLD=0.9999):
        decision = route_message(text="order thing help", language="en")

    assert (decision.tier, decision.intent) == (CLARIFY, OUT_OF_SCOPE)
    assert decision.reason["why"] == "low_confidence"
    assert decision.reason["candidate"] == decision.reason["top"][0][0]
    assert decision.confidence == pytest.approx(decision.reason["top"][0][1], abs=1e-4)


def test_empty_message_is_clarified() -> None:
    decision = route_message(text="   \n ", language="en")

    assert decision.tier == CLARIFY
    assert decision.reason == {"kind": "clarify", "why": "empty", "top": []}


def test_email_and_zip_slots_are_normalised() -> None:
    decision = route_message(
        text="I can't log in, my email is Jane.Doe@Example.COM and zip 10001", language="en"
    )

    assert decision.slots == {"email": "jane.doe@example.com", "zip": "10001"}


def test_full_width_input_is_normalised() -> None:
    decision = route_message(text="＃Ｗ２６１１３４０？", language="zh")

    assert decision.intent == ORDER_STATUS
    assert decision.slots["order_id"] == "#W2611340"


def test_intent_scoped_slot_pattern_only_applies_to_its_intent() -> None:
    SlotPattern.objects.create(
        name="street",
        regex=r"(?P<value>\d+ [a-z]+ (?:street|road|ave|st))",
        intent=Intent.objects.get(name=CHANGE_ADDRESS),
    )

    moved = route_message(
        text="please change the address on my order to 12 elm street", language="en"
    )
    other = route_message(text="how much is shipping to 12 elm street", language="en")

    assert moved.intent == CHANGE_ADDRESS
    assert moved.slots["street"] == "12 elm street"
    assert other.intent != CHANGE_ADDRESS
    assert "street" not in other.slots


def test_disabled_rule_no_longer_fires() -> None:
    text = "laptop vs tablet?"
    assert route_message(text=text, language="en").reason.get("rule") == "comparison"

    rule = Rule.objects.get(name="comparison")
    rule.enabled = False
    rule.save()

    decision = route_message(text=text, language="en")
    assert decision.reason.get("rule") != "comparison"


def test_rule_language_filter() -> None:
    Rule.objects.filter(name="comparison").update(languages=["zh"])
    versioning.router_version_bump()

    assert route_message(text="laptop vs tablet?", language="en").reason.get("rule") != "comparison"
    assert route_message(text="笔记本和平板哪个好", language="zh").reason["rule"] == "comparison"


def test_broken_rule_in_database_is_skipped_not_fatal() -> None:
    # Written around the admin's validation, as a raw SQL fix or a bad import could.
    Rule.objects.filter(name="comparison").update(pattern="(unclosed")
    versioning.router_version_bump()

    decision = route_message(text="where is my order #W2611340", language="en")

    assert decision.intent == ORDER_STATUS


def test_disabled_intent_is_never_chosen() -> None:
    Intent.objects.filter(name=SHIPPING_COST).update(enabled=False)
    versioning.router_version_bump()

    decision = route_message(text="how much is shipping", language="en")

    assert decision.intent != SHIPPING_COST
    assert all(intent != SHIPPING_COST for intent, _ in decision.reason["top"])


STORE_PICKUP_EXAMPLES = [
    ("can i pick up my order at the store", "en"),
    ("store pickup available?", "en"),
    ("i want to collect it in person at your shop", "en"),
    ("click and collect", "en"),
    ("pick up in store instead of delivery", "en"),
    ("can i get it from the store myself", "en"),
    ("do you do in-store pickup", "en"),
    ("collect from the shop tomorrow", "en"),
    ("可以到店自提吗", "zh"),
    ("我想去门店取货", "zh"),
    ("支持门店自取吗", "zh"),
    ("到店自提", "zh"),
    ("门店自提行不行", "zh"),
    ("我自己去店里拿可以吗", "zh"),
]


def test_admin_edits_retrain_the_classifier_without_restart() -> None:
    question = "could i pick it up in store myself?"
    before_version = versioning.router_version_get()
    assert route_message(text=question, language="en").intent != "store_pickup"

    intent = Intent.objects.create(name="store_pickup", tier=L1, description="Pick up in store")
    for text, language in STORE_PICKUP_EXAMPLES:
        Utterance.objects.create(intent=intent, language=language, text=text)

    after_version = versioning.router_version_get()
    assert after_version.version == before_version.version + 1 + len(STORE_PICKUP_EXAMPLES)
    decision = route_message(text=question, language="en")
    assert (decision.tier, decision.intent) == (L1, "store_pickup"), decision.reason
    assert route_message(text="门店可以自提吗", language="zh").intent == "store_pickup"

    # Deleting the intent takes it out again.
    intent.delete()
    assert route_message(text=question, language="en").intent != "store_pickup"


def test_other_process_edits_are_noticed_within_the_poll_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [1000.0]
    monkeypatch.setattr(versioning, "_clock", lambda: now[0])
    question = "could i pick it up in store myself?"
    assert route_message(text=question, language="en").intent != "store_pickup"

    # Another process's edit: rows and the version change, but no signal reaches us.
    intent = Intent.objects.bulk_create([Intent(name="store_pickup", tier=L1)])[0]
    Utterance.objects.bulk_create(
        Utterance(intent=intent, language=language, text=text)
        for text, language in STORE_PICKUP_EXAMPLES
    )
    RouterVersion.objects.filter(pk=1).update(version=F("version") + 1)

    # Within the interval no database check happens: the old classifier answers.
    now[0] += versioning.CHECK_INTERVAL_S / 2
    assert route_message(text=question, language="en").intent != "store_pickup"

    now[0] += versioning.CHECK_INTERVAL_S
    assert route_message(text=question, language="en").intent == "store_pickup"


def test_routing_data_changes_bump_the_version() -> None:
    start = versioning.router_version_get()
    intent = Intent.objects.get(name=GREETING)

    intent.description = "hello/thanks/bye"
    intent.save()
    utterance = Utterance.objects.create(intent=intent, language="en", text="heya")
    utterance.delete()
    pattern = SlotPattern.objects.get(name="zip")
    pattern.enabled = False
    pattern.save()

    end = versioning.router_version_get()
    assert end.version == start.version + 4
    assert end.stamp != start.stamp


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("where is my order", "en"),
        ("我的订单到哪了", "zh"),
        ("我的order到哪了", "zh"),
        ("cancel 我的 order please", "en"),
        ("W2611340", "en"),
        ("", "en"),
        ("订单W2611340", "zh"),
    ],
)
def test_language_detect(text: str, language: str) -> None:
    assert language_detect(text) == language


def test_database_outage_keeps_routing_on_the_last_good_data(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert route_message(text="where is my order", language="en").intent == ORDER_STATUS

    def down() -> versioning.VersionKey:
        raise ConnectionError("database is down")

    monkeypatch.setattr(versioning, "router_version_get", down)
    versioning.router_caches_expire()

    decision = route_message(text="where is my order", language="en")
    assert (decision.tier, decision.intent) == (L1, ORDER_STATUS)
