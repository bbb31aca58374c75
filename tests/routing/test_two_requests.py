"""Two requests in one message, one about an order: the large tier answers both
instead of the classifier keeping one (issue #17 item 5, rule ``two-requests``)."""

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
    ],
)
def test_one_request_is_not_split(text: str, language: str) -> None:
    assert route_message(text=text, language=language).reason.get("rule") != "two-requests"
