"""Knowledge-aware routing: a general question the knowledge base answers goes to L2,
even when the classifier learned nothing about its topic; a message about the
shopper's own order keeps its L1 intent."""

from __future__ import annotations

from typing import Any

import pytest

from routing import types as rt
from routing.knowledge_route import is_personal, is_question, knowledge_route, unknown_question
from routing.router import route_message
from tests.kb import approved_article, passage

pytestmark = pytest.mark.django_db

GIFT_CARDS = """# Gift cards

## Do gift cards expire?

Gift cards expire 36 months after purchase. They can be used online and in every store.
"""


@pytest.fixture
def gift_card_article(seeded: dict[str, int], settings: Any) -> None:
    """A support admin adds an article and approves its card; the router is not retrained."""
    approved_article(settings, title="Gift cards", text=GIFT_CARDS)


def route(text: str) -> rt.RouteDecision:
    decision = route_message(text=text, language="en")
    return knowledge_route(decision, text=text, language="en")


def test_a_new_article_routes_its_questions_to_l2_without_retraining(
    gift_card_article: None,
) -> None:
    # The classifier alone would send this to L1 delivery_time.
    text = "How long is a gift card valid before it expires?"
    assert route_message(text=text, language="en").tier != rt.L2
    decision = route(text)
    assert decision.tier == rt.L2, decision
    assert decision.reason["kind"] == "knowledge" and "card" in decision.reason["by"]
    assert decision.reason["was"]["tier"] != rt.L2
    assert route("Do gift cards expire?").tier == rt.L2


def test_the_shoppers_own_order_keeps_its_intent(gift_card_article: None) -> None:
    assert route("where is my order #W2611340?").tier == rt.L1
    assert route("I want to cancel my order").intent == rt.CANCEL_ORDER


def test_with_the_switch_off_the_classifier_decides(gift_card_article: None, settings: Any) -> None:
    settings.TIERDESK_ROUTE_BY_KNOWLEDGE = False
    assert route("How long is a gift card valid before it expires?").reason["kind"] != "knowledge"


def test_personal_and_question_forms() -> None:
    assert is_personal("where is my package") and is_personal("订单W2611340到哪了")
    assert not is_personal("how long does a refund to a credit card take?")
    assert is_question("how long does a refund take") and is_question("退款要多久")
    assert not is_question("I want to cancel")


def test_a_rule_question_about_my_order_is_told_from_a_request() -> None:
    from routing.knowledge_route import is_rule_question

    assert is_rule_question("my order is processed, I can still cancel it right?")
    assert is_rule_question("if I change my card now does it apply to that order?")
    assert is_rule_question("我的订单已经发货了，还能改地址吗？")
    assert not is_rule_question("can i change the address on my order")
    assert not is_rule_question("my order still says pending, where is it?")
    assert not is_rule_question("我的订单到哪了")


def test_an_unplaced_question_with_nothing_in_the_kb_goes_to_l2_to_say_so(
    gift_card_article: None,
) -> None:
    """The clarify menu would only ask again; L2 says it doesn't know and offers a
    person. A statement, an order of the shopper's, or a guess at an order intent
    keeps its clarify."""

    def unsure(text: str, candidate: str = rt.KNOWLEDGE_QUESTION) -> rt.RouteDecision:
        decision = rt.RouteDecision(
            tier=rt.CLARIFY,
            intent=rt.OUT_OF_SCOPE,
            confidence=0.2,
            reason={"kind": "clarify", "why": "low_confidence", "candidate": candidate},
        )
        return knowledge_route(decision, text=text, language="en")

    decision = unsure("do you ship to Antarctica?")
    assert decision.tier == rt.L2 and decision.reason["kind"] == "knowledge"
    assert "doesn't answer" in decision.reason["by"]
    assert unsure("asdf qwerty zxcv").tier == rt.CLARIFY
    off_topic = rt.RouteDecision(
        tier=rt.CLARIFY,
        intent=rt.OUT_OF_SCOPE,
        confidence=1.0,
        reason={"kind": "clarify", "why": rt.OUT_OF_SCOPE, "top": [[rt.OUT_OF_SCOPE, 1.0]]},
    )
    text = "what's the weather in Paris tomorrow?"
    assert knowledge_route(off_topic, text=text, language="en").tier == rt.CLARIFY
    assert unsure("where is my package?").tier == rt.CLARIFY
    # About "my order" but placed nowhere: the card answers it.
    assert unsure("my order came with a gift card, do gift cards expire?").tier == rt.L2
    # A guess at an order intent is not "a question nobody wrote about" (whatever else
    # the knowledge base may still answer for it).
    guess = rt.RouteDecision(
        tier=rt.CLARIFY,
        intent=rt.OUT_OF_SCOPE,
        confidence=0.3,
        reason={"kind": "clarify", "why": "low_confidence", "candidate": rt.ORDER_STATUS},
    )
    assert not unknown_question(guess, "when does it come?")


def test_the_passage_l2_would_answer_from_decides_not_the_first_ranked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ "消费多少能升银卡" ranked the pickup section first (not relevant) and the
    membership levels, which answer it, second: the router looked at the first only and
    left the question with the shipping-cost flow, which listed shipping prices."""
    from knowledge import cards, retrieval

    zh: dict[str, Any] = {"title": "", "language": "zh"}
    ranked = [
        passage(1, "到门店自提订单", "结账时可以选择到我们的门店免费自提。", **zh, relevant=False),
        passage(2, "会员等级", "一个自然年内消费满500美元升为银卡。", **zh),
    ]
    question = "消费多少能升银卡"
    monkeypatch.setattr(cards, "card_match", lambda **_: None)
    monkeypatch.setattr(
        retrieval,
        "passages_retrieve",
        lambda **_: retrieval.RetrievalResult(
            question=question, language="zh", keywords=[], method="hybrid", passages=ranked
        ),
    )
    decision = rt.RouteDecision(
        tier=rt.L1, intent=rt.SHIPPING_COST, confidence=0.99, reason={"kind": "classifier"}
    )
    routed = knowledge_route(decision, text=question, language="zh")
    assert routed.tier == rt.L2 and routed.reason["by"].startswith("passage 2 ")
    # Nothing relevant at all: the flow keeps it.
    ranked.pop()
    assert knowledge_route(decision, text=question, language="zh") == decision
