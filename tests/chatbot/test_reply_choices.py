"""Replies to a question with options are read as those options first (their wording,
their place in the list, an item's name, a date), before any yes/no; a reply that
picks none gets the question again with the options as buttons. Real PostgreSQL, the
demo shop data and the real router; no model is involved."""

from __future__ import annotations

from typing import Any

import pytest

from chatbot.answerers.base import AnswerPlan
from chatbot.answerers.reply_match import Option, days_in_text, places_in_text, reply_pick
from chatbot.dialogue import Dialogue, TurnContext
from chatbot.orders.models import Order
from shop.models import ShopProfile
from shop.seed import profile_seed

pytestmark = pytest.mark.django_db

JAMES = "james_li_5688"  # two delivered orders: #W4435622, #W3638028
CAMERA_AND_PUZZLE = "#W3638028"
MEI = "mei_patel_7272"  # only pending orders
CHEN = "chen_lopez_3345"
CHEN_PENDING, CHEN_DELIVERED = "#W1790752", "#W9360566"
SOFIA_T = "sofia_thomas_1518"
SOFIA_T_PENDING, SOFIA_T_DELIVERED = ("#W7619352", "#W2297866"), "#W3388163"


def turn(text: str, *, customer: str, state: dict[str, Any], lang: str = "en") -> AnswerPlan:
    ctx = TurnContext(
        text=text,
        language=lang,
        state=state,
        customer_id=customer,
        identity="token",
        history=[],
    )
    return Dialogue(ctx).plan()


def test_the_reason_the_bot_offered_is_not_a_no(seeded_shop: None) -> None:
    state: dict[str, Any] = {}
    plan = turn("cancel my order", customer=MEI, state=state)
    listed = list(state["order_choices"])
    assert len(listed) >= 2 and plan.choices and listed[0] in plan.choices[0]

    # "The first one" picks the first listed order, not the greeting.
    plan = turn("the first one", customer=MEI, state=state)
    assert state.get("cancel_order_id") == listed[0], plan.text
    assert "no longer needed" in plan.text and plan.choices == [
        "no longer needed",
        "ordered by mistake",
    ]

    # The bot's own suggestion, word for word: the reason, never "OK, I haven't cancelled".
    plan = turn("no longer needed", customer=MEI, state=state)
    assert "haven't cancelled" not in plan.text
    assert plan.actions == ["confirm"] and "no longer needed" in plan.text
    assert state["pending_action"]["reason"] == "no longer needed"
    assert Order.objects.get(order_id=listed[0]).status == "pending"


def test_zh_ordinal_and_reason(seeded_shop: None) -> None:
    state: dict[str, Any] = {}
    turn("我要取消订单", customer=MEI, state=state, lang="zh")
    listed = list(state["order_choices"])
    plan = turn("第二个", customer=MEI, state=state, lang="zh")
    assert state.get("cancel_order_id") == listed[1], plan.text
    assert plan.choices == ["不再需要", "误下单"]
    plan = turn("不再需要", customer=MEI, state=state, lang="zh")
    assert plan.actions == ["confirm"] and "没有取消" not in plan.text
    assert state["pending_action"]["reason"] == "no longer needed"


def test_an_unclear_reason_gets_the_question_again_with_buttons(seeded_shop: None) -> None:
    state: dict[str, Any] = {}
    order_id = Order.objects.filter(customer__customer_id=MEI).values_list("order_id", flat=True)[0]
    turn(f"cancel order {order_id}", customer=MEI, state=state)
    plan = turn("hmm", customer=MEI, state=state)
    assert "haven't cancelled" not in plan.text
    assert plan.choices == ["no longer needed", "ordered by mistake"]
    assert state["awaiting"] == "cancel_reason"
    # The button's label is read back as that reason.
    plan = turn(plan.choices[1], customer=MEI, state=state)
    assert state["pending_action"]["reason"] == "ordered by mistake"

    # A confirmation answered with neither yes nor no: asked again, still pending.
    plan = turn("hmm", customer=MEI, state=state)
    assert plan.actions == ["confirm"] and "To confirm" in plan.text
    assert state["pending_action"]["order_id"] == order_id
    plan = turn("no", customer=MEI, state=state)
    assert "haven't cancelled" in plan.text and "pending_action" not in state


def test_return_by_item_name_and_order_by_date(seeded_shop: None) -> None:
    state: dict[str, Any] = {}
    plan = turn(f"I want to return something from {CAMERA_AND_PUZZLE}", customer=JAMES, state=state)
    assert state["awaiting"] == "return_items" and "All of them" in plan.choices
    puzzle = next(c for c in plan.choices if "Puzzle" in c)
    plan = turn("the puzzle", customer=JAMES, state=state)
    assert plan.actions == ["confirm"] and f"To confirm: return {puzzle}" in plan.text

    # Which order, by the date it was placed on.
    state = {}
    plan = turn("I want to return an item", customer=JAMES, state=state)
    assert state["awaiting"] == "order" and len(plan.choices) == 2
    order = Order.objects.get(order_id=CAMERA_AND_PUZZLE)
    day = order.placed_on.strftime("%B ") + str(order.placed_on.day)
    plan = turn(f"the one from {day}", customer=JAMES, state=state)
    assert state.get("return_flow", {}).get("order_id") == CAMERA_AND_PUZZLE, plan.text


@pytest.mark.parametrize(
    ("lang", "ask", "answer"),
    [
        ("en", "where is my order?", "the pending one"),
        ("zh", "我的订单到哪了？", "待处理的那个"),
    ],
)
def test_an_order_picked_by_the_status_its_button_shows(
    seeded_shop: None, lang: str, ask: str, answer: str
) -> None:
    # Chen Lopez: one pending order and one delivered, listed with their status (a
    # question about an order may be about any of them).
    state: dict[str, Any] = {}
    plan = turn(ask, customer=CHEN, state=state, lang=lang)
    assert len(plan.choices) == 2, plan.choices
    turn(answer, customer=CHEN, state=state, lang=lang)
    assert state.get("last_order_id") == CHEN_PENDING, state


@pytest.mark.parametrize(
    ("lang", "ask"), [("en", "I'd like to cancel an order"), ("zh", "我要取消订单")]
)
def test_which_order_to_cancel_offers_only_the_cancellable_ones(
    seeded_shop: None, lang: str, ask: str
) -> None:
    # Sofia Thomas: two pending orders and a delivered one, which isn't offered.
    state: dict[str, Any] = {}
    plan = turn(ask, customer=SOFIA_T, state=state, lang=lang)
    assert sorted(state["order_choices"]) == sorted(SOFIA_T_PENDING), plan.text
    assert len(plan.choices) == 2 and SOFIA_T_DELIVERED not in plan.text
    # Chen Lopez: the one order that can be cancelled is the one asked about.
    state = {}
    plan = turn(ask, customer=CHEN, state=state, lang=lang)
    assert state.get("cancel_order_id") == CHEN_PENDING and CHEN_DELIVERED not in plan.text
    assert plan.choices == (
        ["no longer needed", "ordered by mistake"] if lang == "en" else ["不再需要", "误下单"]
    )


@pytest.mark.parametrize(
    ("intent", "lang", "ask", "says"),
    [
        ("cancel_order", "en", "I want to cancel my order", "None of your orders can be cancelled"),
        ("cancel_order", "zh", "我要取消订单", "没有可以取消的订单"),
        (
            "change_address",
            "en",
            "I need to change my shipping address",
            "addresses can be changed",
        ),
        ("change_address", "zh", "我要修改收货地址", "没有可以修改地址的订单"),
    ],
)
def test_no_order_the_action_allows_is_said_plainly(
    seeded_shop: None, intent: str, lang: str, ask: str, says: str
) -> None:
    # James: two shipped orders and two delivered ones, none pending.
    state: dict[str, Any] = {}
    plan = turn(ask, customer=JAMES, state=state, lang=lang)
    assert plan.intent == intent and says in plan.text, plan.text
    assert plan.choices == [] and "awaiting" not in state
    assert not any(oid in plan.text for oid in ("#W2611340", "#W4435622", CAMERA_AND_PUZZLE))


def test_a_reply_naming_no_order_is_asked_again(seeded_shop: None) -> None:
    state: dict[str, Any] = {}
    first = turn("I want to return an item", customer=JAMES, state=state)
    plan = turn("hmm not sure", customer=JAMES, state=state)
    assert plan.choices == first.choices and first.text in plan.text
    assert state["awaiting"] == "order"


def test_the_matcher_reads_places_names_dates_and_wording() -> None:
    options = [
        Option("a", "#W1", names=("Jigsaw Puzzle",)),
        Option("b", "#W2", names=("Hiking Boots",)),
        Option("c", "no longer needed"),
    ]
    assert [o.key for o in reply_pick("the second one", options)] == ["b"]
    assert [o.key for o in reply_pick("最后一个", options)] == ["c"]
    assert [o.key for o in reply_pick("boots please", options)] == ["b"]
    assert [o.key for o in reply_pick("No longer needed!", options)] == ["c"]
    assert [o.key for o in reply_pick("1 and 2", options, many=True)] == ["a", "b"]
    assert reply_pick("1 and 2", options) == []  # one asked for, two named
    assert reply_pick("what", [Option("h", "Hat", names=("Hat",))]) == []
    assert places_in_text("#W4435622", 5) == [] and places_in_text("May 3", 5) == []
    assert days_in_text("the one from May 3rd") == [(5, 3)]
    assert days_in_text("5月3日那单") == [(5, 3)] and days_in_text("2024-05-03") == [(5, 3)]


@pytest.fixture
def shopify_profile() -> None:
    profile_seed()
    row = ShopProfile.objects.get()
    row.order_id_formats = "#{3-6}"
    row.save()  # clears the profile cache of this process


def test_the_shops_own_order_ids_are_not_places(shopify_profile: None) -> None:
    # A Shopify shop: "#1004" and "order 1004" are ids; their digits pick nothing.
    assert places_in_text("#1004", 5) == [] and places_in_text("order 1004", 5) == []
    assert places_in_text("2 from order #1004", 5) == [2]
