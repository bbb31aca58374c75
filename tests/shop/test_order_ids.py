"""The recogniser built from a shop's order-id forms finds its ids in free text in
any configured form, and never an amount, a phone number, a date or a postcode."""

from __future__ import annotations

import pytest

from shop.order_ids import OrderIdRecogniser, order_id_recogniser
from shop.specs import order_id_specs_parse


def _ids(forms: str) -> OrderIdRecogniser:
    return order_id_recogniser(order_id_specs_parse(forms))


DEMO = "#W{7}"
SHOPIFY = "#{3-6}"
MAGENTO = "{9}"
WOO = "{4-8}"


@pytest.mark.parametrize(
    ("forms", "text", "found"),
    [
        (DEMO, "where is my order #W2611340?", ["#W2611340"]),
        (DEMO, "订单W2611340到哪了", ["#W2611340"]),
        (DEMO, "# w 2611340 and #W9583042", ["#W2611340", "#W9583042"]),
        (SHOPIFY, "where is #1001?", ["#1001"]),
        (SHOPIFY, "order 1001 hasn't arrived", ["#1001"]),
        (SHOPIFY, "Order number: 4521 please", ["#4521"]),
        (SHOPIFY, "订单号1001还没到", ["#1001"]),
        (SHOPIFY, "I paid $1001 for order #1002", ["#1002"]),
        (MAGENTO, "my order 000000123 never came", ["000000123"]),
        (MAGENTO, "000000123 is late", ["000000123"]),
        (WOO, "where is order 12345", ["12345"]),
        (WOO, "12345", ["12345"]),  # the whole message: the answer to "which order?"
        (f"{DEMO}\n{SHOPIFY}", "is #W2611340 or #1001 mine?", ["#W2611340", "#1001"]),
    ],
)
def test_ids_in_free_text(forms: str, text: str, found: list[str]) -> None:
    assert _ids(forms).find_all(text) == found


@pytest.mark.parametrize("forms", [SHOPIFY, MAGENTO, WOO])
@pytest.mark.parametrize(
    "text",
    [
        "I was charged $1001 twice",
        "it cost 1001 dollars",
        "refund of €123456789",
        "call me on 555-123-4567",
        "my phone is 415 555 0100",
        "phone 000000123",
        "it came on 2026-12-07",
        "ordered 12/07/2026",
        "my zip is 10001",
        "I live at 90210 Main St",
        "I bought 1001 items",
        "it weighs 12.50 kg",
        "a 1001% increase",
        "my order from 2024",
    ],
)
def test_no_amounts_phones_dates_or_postcodes(forms: str, text: str) -> None:
    assert _ids(forms).find_all(text) == []


@pytest.mark.parametrize(
    ("forms", "text"),
    [(DEMO, "AW1234567"), (DEMO, "W26113401"), (DEMO, "W261134"), (SHOPIFY, "&#1234;")],
)
def test_near_misses_are_not_ids(forms: str, text: str) -> None:
    assert _ids(forms).find(text) is None


@pytest.mark.parametrize(
    ("forms", "typed", "canonical"),
    [
        (DEMO, " # W2611340 ", "#W2611340"),
        (DEMO, "w2611340", "#W2611340"),
        (SHOPIFY, "1001", "#1001"),
        (SHOPIFY, "#1001", "#1001"),
        (MAGENTO, "000000123", "000000123"),
        (WOO, "#12345", "12345"),
        (DEMO, "W123", None),
        (MAGENTO, "123", None),
        (SHOPIFY, "not an id", None),
    ],
)
def test_normalize(forms: str, typed: str, canonical: str | None) -> None:
    assert _ids(forms).normalize(typed) == canonical


def test_example_is_in_the_first_form() -> None:
    assert _ids(f"{SHOPIFY}\n{DEMO}").example() == "#123"
    assert _ids(DEMO).normalize(_ids(DEMO).example()) == _ids(DEMO).example()


def test_blank_removes_the_ids_and_keeps_the_other_numbers() -> None:
    shopify, demo = _ids(SHOPIFY), _ids(DEMO)
    assert shopify.blank("1 from #1004").split() == ["1", "from"]
    # The order word goes with its id; the amount stays.
    assert shopify.blank("the 2nd of order 1004, £39.50").split() == [
        "the",
        "2nd",
        "of",
        ",",
        "£39.50",
    ]
    assert shopify.blank("#1004").strip() == ""  # the whole message is an id
    assert demo.blank("2 from #W4435622 and 3").split() == ["2", "from", "and", "3"]
    assert shopify.blank("2 from #W4435622") == "2 from #W4435622"  # not this shop's form
