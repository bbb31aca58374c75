"""An order flow quotes the shop's rule only when it answers this shopper: the
sentence is about what the message asks beyond the order intent's own topic, and the
case it is stated for (membership level, orders within the shop's country or to other
countries, a place) is the shopper's, as the message or the records tell it. A plain
status question gets no rule; a sentence for another case, or a case the bot can't
tell, is left out.

Real PostgreSQL, the real embedder, retrieval and the seeded order data (the demo
shop's profile: home country US, levels guest to gold, guest the default); the
decision is built by hand so the test is about the flow, not about the classifier.
The articles are made up for this test.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from chatbot.answerers.l1 import L1Answerer
from chatbot.dialogue import TurnContext
from knowledge import cards, index, shop_words
from routing import types as rt
from routing.templates import template_get
from tests.kb import approved_article

pytestmark = pytest.mark.django_db

ARTICLE_EN = """# Your order, step by step

## Order times

Times on your orders are shown in Central European time, on a 24-hour clock.

## How long an order takes to arrive

Orders within the country arrive in 2 to 4 working days. Orders to other countries
arrive in 9 to 14 working days.

## Orders stopped at a border

Orders to other countries that customs holds back are cancelled and refunded.

## How long you have to return an order

Guests can return an order within 20 days of delivery. Gold members can return an
order within 120 days of delivery.
"""

ARTICLE_ZH = """# 订单须知

## 订单时间

订单上显示的时间均为北京时间，采用24小时制。

## 订单多久送达

国内订单2到4个工作日送达。寄往其他国家的订单需要9到14个工作日送达。

## 退货期限

普通访客可以在收货后20天内退货。金卡会员可以在收货后120天内退货。
"""

# A verified shopper whose four orders all ship within the US (two delivered).
SHOPPER = "james_li_5688"


@pytest.fixture
def kb(seeded_shop: None, settings: Any) -> Iterator[None]:
    from knowledge.seed import synonyms_seed

    synonyms_seed()  # the shop's words, with the levels' Chinese names
    shop_words.reset()
    approved_article(settings, title="Your order, step by step", text=ARTICLE_EN)
    approved_article(settings, title="订单须知", text=ARTICLE_ZH, language="zh")
    yield
    index.reset()
    cards.cards_reset()
    shop_words.reset()


def plan(text: str, intent: str, *, language: str = "en", customer: str = "") -> Any:
    ctx = TurnContext(text=text, language=language, state={}, customer_id=customer, history=[])
    decision = rt.RouteDecision(
        tier=rt.L1, intent=intent, confidence=0.9, reason={"kind": "classifier"}
    )
    return L1Answerer().plan(ctx, decision)


def ask_identity(language: str) -> str:
    return template_get(intent="dialogue", key="ask_identity", language=language)


# Each test ingests the articles (tens of seconds): the wordings of a class are asked
# in one test, each checked on its own.
def test_a_plain_order_question_quotes_no_rule(kb: None) -> None:
    """Nothing asked beyond the intent: no order-times, border or delivery-time
    sentence in front of the flow's question, only the flow's own step."""
    for text, intent, language in (
        ("where is my order?", rt.ORDER_STATUS, "en"),
        ("any news on my order?", rt.ORDER_STATUS, "en"),
        ("has my order shipped yet?", rt.ORDER_STATUS, "en"),
        ("when will my order arrive?", rt.DELIVERY_TIME, "en"),
        ("can I cancel my order?", rt.CANCEL_ORDER, "en"),
        ("when will my things get here?", rt.DELIVERY_TIME, "en"),
        ("我的订单到哪了？", rt.ORDER_STATUS, "zh"),
        ("我的订单什么时候到？", rt.DELIVERY_TIME, "zh"),
    ):
        reply = plan(text, intent, language=language)
        assert (text, reply.text) == (text, ask_identity(language))
        assert not reply.cited(), text


def test_a_sentence_for_a_case_the_bot_cant_tell_is_left_out(kb: None) -> None:
    """The shopper isn't verified and names no level, or names a city the bot can't
    place in a country: neither the home nor the abroad sentence, neither the guests'
    nor the gold members' window is theirs for sure."""
    for text, intent, language in (
        ("how many days until my order reaches me in Dallas?", rt.DELIVERY_TIME, "en"),
        ("how long does my order take to get to Toronto?", rt.DELIVERY_TIME, "en"),
        ("can I still return my order after 15 days?", rt.RETURN_ITEM, "en"),
        ("收货15天后还能退货吗？", rt.RETURN_ITEM, "zh"),
        ("我的订单寄到成都要几个工作日？", rt.DELIVERY_TIME, "zh"),
    ):
        reply = plan(text, intent, language=language)
        assert (text, reply.text) == (text, ask_identity(language))


def test_a_verified_shoppers_home_order_gets_the_home_rule_only(kb: None) -> None:
    """All the shopper's orders ship within the shop's country: the domestic time,
    never the time for orders abroad; then the flow asks which order."""
    for text in (
        "how many working days does delivery take for my order?",
        "how long is the delivery time for my order in working days?",
    ):
        reply = plan(text, rt.DELIVERY_TIME, customer=SHOPPER)
        assert reply.text.startswith("Orders within the country arrive in 2 to 4 working days.")
        assert "9 to 14" not in reply.text
        assert reply.cited()


def test_the_level_the_shopper_names_gets_its_own_window(kb: None) -> None:
    for text, language, want, not_want in (
        ("I'm a gold member, how many days do I have to return my order?", "en", "120", "Guests"),
        ("as a Gold member can I return my order after 60 days?", "en", "120", "Guests"),
        ("我是金卡会员，收货多少天内可以退货？", "zh", "120天", "普通访客"),
    ):
        reply = plan(text, rt.RETURN_ITEM, language=language)
        assert want in reply.text and not_want not in reply.text, (text, reply.text)
        assert reply.cited(), text


def test_a_verified_shopper_gets_the_default_levels_window(kb: None) -> None:
    """The order system gives no level: the profile's default (guest) applies, as in
    the return flow itself."""
    reply = plan("how many days do I have to return my order?", rt.RETURN_ITEM, customer=SHOPPER)
    assert reply.text.startswith("Guests can return an order within 20 days of delivery.")
    assert "120 days" not in reply.text


# -- held out: fresh order-intent messages, with and without a rule subject --------------------
@dataclass(frozen=True)
class Case:
    text: str
    intent: str
    language: str = "en"
    customer: str = ""
    want: str = ""  # the sentence's words a right rule has; "" for no rule at all
    not_want: tuple[str, ...] = ()


NO_RULE_FIGURES = ("2 to 4", "9 to 14", "20 days", "120 days", "24-hour", "customs")
NO_RULE_FIGURES_ZH = ("2到4", "9到14", "20天", "120天", "24小时", "北京时间")
HELD_OUT = [
    Case("where's my parcel at", rt.ORDER_STATUS),
    Case("can you check on my order for me?", rt.ORDER_STATUS),
    Case("is my package on its way?", rt.ORDER_STATUS),
    Case("when is my order going to be delivered?", rt.DELIVERY_TIME),
    Case("when do I get my stuff?", rt.DELIVERY_TIME),
    Case("I'd like to cancel my order", rt.CANCEL_ORDER),
    Case("did my refund go through?", rt.REFUND_STATUS),
    Case("我的包裹现在在哪里？", rt.ORDER_STATUS, "zh"),
    Case("帮我查一下订单状态", rt.ORDER_STATUS, "zh"),
    Case("我的快递几号能送到？", rt.DELIVERY_TIME, "zh"),
    Case("my order goes to Seattle, how many days will that take?", rt.DELIVERY_TIME),
    Case("return window for my order? it was delivered 25 days ago", rt.RETURN_ITEM),
    Case("订单寄到杭州要多少个工作日？", rt.DELIVERY_TIME, "zh"),
    Case(
        "how many working days will my order need to arrive?",
        rt.DELIVERY_TIME,
        customer=SHOPPER,
        want="2 to 4 working days",
        not_want=("9 to 14",),
    ),
    Case(
        "I'm a gold member, how long can I take to return my order?",
        rt.RETURN_ITEM,
        want="120 days",
        not_want=("Guests",),
    ),
    Case(
        "gold member here, is 90 days too late to return my order?",
        rt.RETURN_ITEM,
        want="120 days",
        not_want=("Guests",),
    ),
    Case(
        "how many days after delivery can I return my order?",
        rt.RETURN_ITEM,
        customer=SHOPPER,
        want="20 days",
        not_want=("120 days",),
    ),
    Case(
        "金卡会员的订单收货后多少天内能退？",
        rt.RETURN_ITEM,
        "zh",
        want="120天",
        not_want=("普通访客",),
    ),
    Case(
        "我是金卡会员，收货两个月了还能退货吗？",
        rt.RETURN_ITEM,
        "zh",
        want="120天",
        not_want=("普通访客",),
    ),
    Case(
        "what time zone are the times on my order in?",
        rt.ORDER_STATUS,
        want="Central European time",
    ),
]


def held_out_tally() -> dict[str, int]:
    """right: the rule wanted and nothing else (or no rule when none is wanted);
    wrong: a rule quoted where none fits, or another case's sentence; missed: the
    right rule left out."""
    tally = {"right": 0, "wrong": 0, "missed": 0}
    for case in HELD_OUT:
        reply = plan(case.text, case.intent, language=case.language, customer=case.customer)
        if not case.want:
            figures = NO_RULE_FIGURES_ZH if case.language == "zh" else NO_RULE_FIGURES
            quoted = bool(reply.cited()) or any(f in reply.text for f in figures)
            tally["wrong" if quoted else "right"] += 1
        elif any(bad in reply.text for bad in case.not_want):
            tally["wrong"] += 1
        elif case.want in reply.text:
            tally["right"] += 1
        else:
            tally["missed"] += 1
        print(f"{case.text!r}: {reply.text[:120]!r}")
    print("held-out tally:", tally)
    return tally


def test_held_out_order_messages(kb: None) -> None:
    tally = held_out_tally()
    assert tally["wrong"] == 0
    assert tally["right"] >= len(HELD_OUT) - 2
