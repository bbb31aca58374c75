"""The return flow, the order service and in-chat verification read the shop profile:
a jigsaw puzzle is not told "unworn with tags", a changed window or fee changes every
reply that quotes it, and the postcode format decides what verifies (real PostgreSQL,
the demo shop's data, the real router; no model)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from chatbot.answerers.base import AnswerPlan
from chatbot.dialogue import Dialogue, TurnContext
from chatbot.orders import policy
from chatbot.orders.backends import DjangoOrderService
from chatbot.orders.identity import customer_match_from_text, postcodes_in_text
from chatbot.orders.models import Customer, Order, ReturnRequest
from shop.models import ShopProfile
from shop.values import demo_profile_values

pytestmark = pytest.mark.django_db

JAMES = "james_li_5688"
BOOTS_AND_BOTTLE = "#W4435622"  # Hiking Boots + Water Bottle, delivered
CAMERA_AND_PUZZLE = "#W3638028"  # delivered


def _profile(**changes: Any) -> None:
    row = ShopProfile(**demo_profile_values() | changes)
    row.full_clean()
    row.save()


def turn(
    text: str, *, state: dict[str, Any], lang: str = "en", customer: str = JAMES
) -> AnswerPlan:
    ctx = TurnContext(
        text=text, language=lang, state=state, customer_id=customer, identity="token", history=[]
    )
    return Dialogue(ctx).plan()


def _confirm(order_id: str, item: str, lang: str = "en") -> AnswerPlan:
    state: dict[str, Any] = {}
    turn(f"I want to return something from order {order_id}", state=state, lang=lang)
    items = Order.objects.get(order_id=order_id).items
    number = 1 + [i["name"] for i in items].index(item)
    plan = turn(str(number), state=state, lang=lang)
    assert plan.actions == ["confirm"], plan.text
    return plan


def test_conditions_follow_the_items_category(seeded_shop: None) -> None:
    puzzle = _confirm(CAMERA_AND_PUZZLE, "Jigsaw Puzzle")
    assert "Jigsaw Puzzle" in puzzle.text
    assert "unworn" not in puzzle.text and "tags" not in puzzle.text
    assert "original packaging" in puzzle.text
    boots = _confirm(BOOTS_AND_BOTTLE, "Hiking Boots")
    assert "unworn with their tags attached" in boots.text
    zh = _confirm(BOOTS_AND_BOTTLE, "Water Bottle", lang="zh")
    assert "原包装" in zh.text and "吊牌" not in zh.text


def test_a_changed_window_changes_the_reply_and_the_check(seeded_shop: None) -> None:
    order = Order.objects.get(order_id=CAMERA_AND_PUZZLE)
    assert "30 days from purchase" in _confirm(CAMERA_AND_PUZZLE, "Jigsaw Puzzle").text
    _profile(return_window_days={"guest": 45, "gold": None})
    plan = _confirm(CAMERA_AND_PUZZLE, "Jigsaw Puzzle")
    deadline = policy.return_deadline(order.placed_on, ["Jigsaw Puzzle"])
    assert deadline is not None and (deadline - order.placed_on).days == 45
    assert "45 days from purchase" in plan.text and "30 days" not in plan.text
    assert deadline.strftime("%b ") + str(deadline.day) in plan.text
    # A category that is not returnable: the service refuses, the flow says why.
    _profile(
        category_return_window_days={"toys": 0},
        product_categories={"toys": ["Jigsaw Puzzle"], "apparel": ["Hiking Boots"]},
    )
    puzzle = next(i for i in order.items if i["name"] == "Jigsaw Puzzle")
    with pytest.raises(Exception) as refused:
        DjangoOrderService().request_return(
            customer_id=JAMES, order_id=CAMERA_AND_PUZZLE, item_ids=[puzzle["item_id"]]
        )
    assert getattr(refused.value, "code", "") == "outside_return_window"
    # Gold as the default level: no time limit.
    _profile(default_membership="gold")
    assert "there is no time limit" in _confirm(CAMERA_AND_PUZZLE, "Jigsaw Puzzle").text


def test_a_restocking_fee_is_quoted_and_kept(seeded_shop: None) -> None:
    _profile(restocking_fee_percent=Decimal("10"))
    order = Order.objects.get(order_id=BOOTS_AND_BOTTLE)
    bottle = next(i for i in order.items if i["name"] == "Water Bottle")
    net = (Decimal(str(bottle["price"])) * Decimal("0.9")).quantize(Decimal("0.01"))
    state: dict[str, Any] = {}
    turn(f"I want to return something from order {BOOTS_AND_BOTTLE}", state=state)
    plan = turn("2", state=state)
    assert "10% restocking fee" in plan.text and f"${net}" in plan.text
    turn("yes", state=state)
    assert ReturnRequest.objects.get(order=order).amount == net


def test_postcodes_in_the_shops_format(seeded_shop: None) -> None:
    service = DjangoOrderService()
    james = Customer.objects.get(customer_id=JAMES)
    assert postcodes_in_text(f"I'm James Li, zip {james.zip}, order #W2611340") == [james.zip]
    assert postcodes_in_text("call 555-123-4567 about $12345.00 on 2026-12-07") == []
    match = customer_match_from_text(text=f"James Li {james.zip}", service=service)
    assert match is not None and match.customer.customer_id == JAMES
    Customer.objects.filter(customer_id=JAMES).update(zip="SW1A 1AA")
    assert customer_match_from_text(text="James Li, sw1a 1aa", service=service) is None
    _profile(postcode_formats="uk_postcode", country="GB", currency_code="GBP")
    assert postcodes_in_text("James Li, sw1a  1aa") == ["SW1A 1AA"]
    match = customer_match_from_text(text="James Li, sw1a 1aa", service=service)
    assert match is not None and match.customer.customer_id == JAMES


def test_replies_quote_the_shops_currency(seeded_shop: None) -> None:
    assert "$" in _confirm(BOOTS_AND_BOTTLE, "Water Bottle").text
    _profile(currency_code="GBP", currency_symbol="£", country="GB")
    plan = _confirm(BOOTS_AND_BOTTLE, "Water Bottle")
    assert "refund £" in plan.text and "$" not in plan.text


def test_refund_timing_and_return_shipping_come_from_the_profile(seeded_shop: None) -> None:
    # BOOTS_AND_BOTTLE was paid by gift card: the profile's gift_card text, else "default".
    demo = _confirm(BOOTS_AND_BOTTLE, "Water Bottle")
    assert "immediately" in demo.text and "prepaid shipping label" in demo.text
    _profile(
        refund_timing={
            "default": {"en": "within 10 working days", "zh": "10个工作日内"},
            "credit_card": {"en": "within 2 working days", "zh": "2个工作日内"},
        },
        return_shipping={
            "en": "Return postage is paid by you.",
            "zh": "退货邮费由您承担。",
        },
    )
    en = _confirm(BOOTS_AND_BOTTLE, "Water Bottle")
    assert "within 10 working days once we receive" in en.text
    assert "Return postage is paid by you." in en.text
    assert "prepaid" not in en.text and "immediately" not in en.text
    zh = _confirm(BOOTS_AND_BOTTLE, "Water Bottle", lang="zh")
    assert "10个工作日内" in zh.text and "退货邮费由您承担。" in zh.text
    assert "预付运单" not in zh.text
    # An empty return_shipping says nothing of it.
    _profile(return_shipping={})
    quiet = _confirm(BOOTS_AND_BOTTLE, "Water Bottle")
    assert "postage" not in quiet.text and "prepaid" not in quiet.text
    assert "  " not in quiet.text


def test_a_cancelled_orders_refund_quotes_the_profile(seeded_shop: None) -> None:
    _profile(refund_timing={"default": {"en": "within 10 working days", "zh": "10个工作日内"}})
    state: dict[str, Any] = {}
    turn("cancel #W9583042, no longer needed", state=state, customer="mei_patel_7272")
    plan = turn("yes", state=state, customer="mei_patel_7272")
    assert "is cancelled" in plan.text, plan.text
    assert "(within 10 working days)" in plan.text and "business days" not in plan.text


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("refund_timing", {}, 'refund_timing: give texts by payment method with a "default"'),
        (
            "refund_timing",
            {"default": {"en": "soon"}},
            "refund_timing: 'default' has no text in zh",
        ),
        ("return_shipping", {"en": "Post it back."}, "return_shipping: give"),
    ],
)
def test_refund_and_shipping_texts_are_checked(field: str, value: object, message: str) -> None:
    from shop.values import ProfileError, profile_parse

    with pytest.raises(ProfileError) as error:
        profile_parse(demo_profile_values() | {field: value})
    assert str(error.value).startswith(message), str(error.value)
