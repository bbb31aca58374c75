"""Two requests in one message, one about an order: the large tier answers both
instead of the classifier keeping one (rule ``two-requests``)."""

from __future__ import annotations

import pytest

from routing.router import route_message
from routing.types import COMPLEX_QUESTION, L3

pytestmark = pytest.mark.usefixtures("seeded")


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("where is my order and can you change the address", "en"),
        ("cancel my order #W2611340 and also change my email", "en"),
        ("where's my package and how much is shipping to canada", "en"),
        ("我的订单到哪了？另外我想改地址", "zh"),
        # Two actions on items, no order word (rule's second form).
        ("i want to return the jacket and cancel the sneakers order", "en"),
        ("please cancel the lamp, then change my phone number", "en"),
        ("我要退这件外套，再把鞋子那单取消", "zh"),
        ("我想取消那个台灯，还有运费怎么算", "zh"),
    ],
)
def test_two_requests_go_to_the_large_tier(text: str, language: str) -> None:
    decision = route_message(text=text, language=language)
    assert (decision.tier, decision.intent) == (L3, COMPLEX_QUESTION)
    assert decision.reason.get("rule") == "two-requests"


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("cancel order and refund me", "en"),
        ("where is my order #W2611340", "en"),
        ("change the address on my order and the phone number", "en"),
        ("我的订单还有多久到", "zh"),
        ("i want to exchange the shirt for a bigger size and color", "en"),
        ("我要取消订单，再退款", "zh"),
        ("退货还要自己付运费吗", "zh"),
    ],
)
def test_one_request_is_not_split(text: str, language: str) -> None:
    assert route_message(text=text, language=language).reason.get("rule") != "two-requests"
