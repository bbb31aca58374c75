"""A new shipping address is read in the shop's postcode format and country (shop
profile): a US shop's "street, city, ST 12345", a UK shop's "street, town, postcode"
with no state, any other format's postcode at the end. The change-address flow asks
in the shop's form and stores what it read (real PostgreSQL, the demo shop's orders,
the real router; no model)."""

from __future__ import annotations

from typing import Any

import pytest

from chatbot.answerers.address_parse import address_format_text, parse_address
from chatbot.answerers.base import AnswerPlan
from chatbot.dialogue import Dialogue, TurnContext
from chatbot.orders.models import Order
from shop.models import ShopProfile
from shop.values import demo_profile_values

pytestmark = pytest.mark.django_db

MEI = "mei_patel_7272"
PENDING = "#W9583042"


def _profile(**changes: Any) -> None:
    row = ShopProfile(**demo_profile_values() | changes)
    row.full_clean()
    row.save()


def _uk() -> None:
    _profile(postcode_formats="uk_postcode", country="GB", currency_code="GBP")


def turn(text: str, *, state: dict[str, Any], lang: str = "en") -> AnswerPlan:
    ctx = TurnContext(
        text=text, language=lang, state=state, customer_id=MEI, identity="token", history=[]
    )
    return Dialogue(ctx).plan()


def test_a_us_shop_reads_street_city_state_zip() -> None:
    _profile()
    address = parse_address("500 Oak Ave, Apt 4, Springfield, il 62704")
    assert address is not None
    assert (address.address1, address.address2, address.city) == (
        "500 Oak Ave",
        "Apt 4",
        "Springfield",
    )
    assert (address.state, address.zip, address.country) == ("IL", "62704", "US")
    assert parse_address("12 Oak St, Austin, TX 73301.") is not None
    # No state, or a UK postcode: not a US address.
    assert parse_address("12 Oak St, Austin, 73301") is None
    assert parse_address("221B Baker Street, London, NW1 6XE") is None
    assert "state ZIP" in address_format_text("en")


def test_a_uk_shop_reads_street_town_postcode() -> None:
    _uk()
    address = parse_address("221B Baker Street, Flat 2, London, nw1 6xe")
    assert address is not None
    assert (address.address1, address.address2, address.city) == (
        "221B Baker Street",
        "Flat 2",
        "London",
    )
    assert (address.state, address.zip, address.country) == ("", "NW1 6XE", "GB")
    assert address.one_line() == "221B Baker Street, Flat 2, London, NW1 6XE"
    same_part = parse_address("10 High Street, Leeds LS1 4AB")
    assert same_part is not None and (same_part.city, same_part.zip) == ("Leeds", "LS1 4AB")
    assert parse_address("500 Oak Ave, Springfield, IL 62704") is None
    assert parse_address("London NW1 6XE") is None  # no street
    assert "postcode" in address_format_text("en") and "LS1 4AB" in address_format_text("zh")


def test_any_other_format_reads_a_trailing_postcode() -> None:
    _profile(postcode_formats="generic", country="DE", currency_code="EUR", currency_symbol="€")
    address = parse_address("Hauptstrasse 5, Berlin, 10115")
    assert address is not None and (address.city, address.zip, address.state) == (
        "Berlin",
        "10115",
        "",
    )
    assert parse_address("somewhere nice, Berlin") is None
    assert "1010" in address_format_text("en")


def test_the_change_address_flow_takes_a_uk_address(seeded_shop: None) -> None:
    _uk()
    state: dict[str, Any] = {}
    ask = turn(f"I need to change the shipping address for order {PENDING}", state=state)
    assert "street, town, postcode" in ask.text and "TX" not in ask.text, ask.text
    bad = turn("12 Oak St, Austin, TX 73301, USA, 1", state=state)
    assert "couldn't read that address" in bad.text and "LS1 4AB" in bad.text, bad.text
    confirm = turn("221B Baker Street, Flat 2, London, NW1 6XE", state=state)
    assert confirm.actions == ["confirm"], confirm.text
    assert "221B Baker Street, Flat 2, London, NW1 6XE" in confirm.text
    done = turn("yes", state=state)
    assert done.actions == ["performed:change_address"], done.text
    stored = Order.objects.get(order_id=PENDING).address
    assert stored["zip"] == "NW1 6XE" and stored["city"] == "London"
    assert stored["state"] == "" and stored["country"] == "GB"


def test_the_change_address_flow_asks_in_chinese_in_the_shops_form(seeded_shop: None) -> None:
    _uk()
    ask = turn(f"订单{PENDING}要改收货地址", state={}, lang="zh")
    assert "街道, 城镇, 邮编" in ask.text and "州" not in ask.text, ask.text
