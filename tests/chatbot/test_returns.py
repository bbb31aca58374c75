"""Returns and exchanges of delivered items as L1 flows: the bot lists
the verified shopper's delivered order's items, asks which ones (and for an exchange,
what to swap them for, from the store's variants), states the policy's conditions, and
only an explicit "yes" makes deterministic code request it. Real PostgreSQL, the real
demo shop data and router; no model is involved in any of these replies."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from chatbot.answerers.base import AnswerPlan
from chatbot.dialogue import Dialogue, TurnContext
from chatbot.orders import policy
from chatbot.orders.models import Order, ReturnRequest

pytestmark = pytest.mark.django_db

JAMES = "james_li_5688"  # two delivered orders: #W4435622, #W3638028 (gift card)
BOOTS_AND_BOTTLE = "#W4435622"  # Hiking Boots + Water Bottle, delivered
CAMERA_AND_PUZZLE = "#W3638028"
JAMES_SHIPPED = "#W2611340"
MOHAMED = "mohamed_li_1979"
MOHAMED_OLD_DELIVERY = "#W8864622"  # bought 48 days before the seed: outside the window
MEI = "mei_patel_7272"  # only pending orders


def turn(
    text: str, *, customer: str = JAMES, state: dict[str, Any], lang: str = "en"
) -> AnswerPlan:
    ctx = TurnContext(
        text=text,
        language=lang,
        state=state,
        customer_id=customer,
        identity="token",  # the shop's signed token: strong enough to change an order
        history=[],
    )
    return Dialogue(ctx).plan()


def test_return_lists_items_states_the_policy_and_needs_a_yes(seeded_shop: None) -> None:
    state: dict[str, Any] = {}
    plan = turn(f"I want to return something from order {BOOTS_AND_BOTTLE}", state=state)
    assert (plan.tier, plan.intent) == ("L1", "return_item") and plan.generation is None
    assert "1. Hiking Boots" in plan.text and "2. Water Bottle" in plan.text
    assert state["awaiting"] == "return_items"

    plan = turn("2", state=state)
    order = Order.objects.get(order_id=BOOTS_AND_BOTTLE)
    deadline = policy.return_deadline(order.placed_on, ["Water Bottle"])
    assert deadline is not None
    # The policy's conditions, from the shop profile: window, the bottle's category's
    # condition (not the apparel one), who pays shipping.
    assert "To confirm: return Water Bottle" in plan.text and "Hiking Boots" not in plan.text
    assert f"{policy.return_window_days(['Water Bottle'])} days from purchase" in plan.text
    assert deadline.strftime("%b ") + str(deadline.day) in plan.text
    assert "unused" in plan.text and "unworn" not in plan.text
    assert "prepaid shipping label" in plan.text  # the demo profile's return_shipping
    assert "gift card" in plan.text and "immediately" in plan.text
    assert plan.actions == ["confirm"] and not ReturnRequest.objects.exists()

    plan = turn("yes", state=state)
    assert plan.actions == ["performed:return"] and "is requested" in plan.text
    request = ReturnRequest.objects.get(order__order_id=BOOTS_AND_BOTTLE)
    bottle = next(i for i in order.items if i["name"] == "Water Bottle")
    assert request.kind == "return" and request.status == "requested"
    assert [i["item_id"] for i in request.items] == [bottle["item_id"]]
    assert str(request.amount) == f"{bottle['price']:.2f}"
    assert Order.objects.get(order_id=BOOTS_AND_BOTTLE).status == "return requested"

    # A repeated "yes": nothing new happens, and the shopper is told it's requested.
    plan = turn("yes", state=state)
    assert ReturnRequest.objects.count() == 1 and "performed:return" not in plan.actions

    # Asking again for the same order: refused with the reason.
    plan = turn(f"return the hiking boots from {BOOTS_AND_BOTTLE}", state={})
    assert plan.intent == "return_item" and "already requested" in plan.text
    assert ReturnRequest.objects.count() == 1


def test_a_no_keeps_the_items_and_zh_works(seeded_shop: None) -> None:
    state: dict[str, Any] = {}
    plan = turn(f"订单{BOOTS_AND_BOTTLE}要退货", state=state, lang="zh")
    assert plan.intent == "return_item" and "请问要退哪几件" in plan.text
    plan = turn("全部", state=state, lang="zh")
    assert "请确认" in plan.text and "预付运单" in plan.text and "30天" in plan.text
    plan = turn("不要", state=state, lang="zh")
    assert "没有为订单" in plan.text and not ReturnRequest.objects.exists()
    assert Order.objects.get(order_id=BOOTS_AND_BOTTLE).status == "delivered"


def test_the_service_is_idempotent_and_refuses_with_reasons(seeded_shop: None) -> None:
    from chatbot.orders.backends import DjangoOrderService
    from chatbot.orders.types import OrderNotAllowed, OrderNotFound, OrderServiceError

    shop = DjangoOrderService()
    order = Order.objects.get(order_id=CAMERA_AND_PUZZLE)
    first_item = order.items[0]["item_id"]
    made = shop.request_return(customer_id=JAMES, order_id=CAMERA_AND_PUZZLE, item_ids=[first_item])
    again = shop.request_return(
        customer_id=JAMES, order_id=CAMERA_AND_PUZZLE, item_ids=[first_item]
    )
    assert made.created and not again.created and again.amount == made.amount
    assert ReturnRequest.objects.filter(order=order).count() == 1
    with pytest.raises(OrderNotAllowed) as other:
        shop.request_return(
            customer_id=JAMES, order_id=CAMERA_AND_PUZZLE, item_ids=[order.items[1]["item_id"]]
        )
    assert other.value.code == "already_requested"
    # Not theirs: exactly like a missing order.
    with pytest.raises(OrderNotFound):
        shop.request_return(customer_id=MEI, order_id=BOOTS_AND_BOTTLE, item_ids=[first_item])
    # Not delivered.
    shipped = Order.objects.get(order_id=JAMES_SHIPPED)
    with pytest.raises(OrderNotAllowed) as not_delivered:
        shop.request_return(
            customer_id=JAMES, order_id=JAMES_SHIPPED, item_ids=[shipped.items[0]["item_id"]]
        )
    assert not_delivered.value.code == "not_delivered"
    # Outside the window.
    old = Order.objects.get(order_id=MOHAMED_OLD_DELIVERY)
    window = policy.return_window_days([item["name"] for item in old.items])
    assert window is not None
    assert old.placed_on < timezone.localdate() - timedelta(days=window)
    with pytest.raises(OrderNotAllowed) as late:
        shop.request_return(
            customer_id=MOHAMED, order_id=MOHAMED_OLD_DELIVERY, item_ids=[old.items[0]["item_id"]]
        )
    assert late.value.code == "outside_return_window"
    # An item that isn't in the order.
    with pytest.raises(OrderServiceError) as wrong:
        shop.request_return(customer_id=JAMES, order_id=BOOTS_AND_BOTTLE, item_ids=["123"])
    assert wrong.value.code == "invalid_items"


def test_the_bot_refuses_outside_the_window_and_before_delivery(seeded_shop: None) -> None:
    plan = turn(f"I'd like to return order {MOHAMED_OLD_DELIVERY}", customer=MOHAMED, state={})
    assert plan.intent == "return_item" and "outside our return window" in plan.text
    plan = turn(f"I want to exchange my order {JAMES_SHIPPED}", state={})
    assert plan.intent == "exchange_item" and "still on its way" in plan.text
    plan = turn("I want to return my order", customer=MEI, state={})
    assert "None of your orders has been delivered" in plan.text
    assert not ReturnRequest.objects.exists()


def test_exchange_offers_the_products_other_options_and_confirms(seeded_shop: None) -> None:
    state: dict[str, Any] = {}
    plan = turn("I need to exchange an item", state=state)
    # James has two delivered orders: the bot asks which, listing only delivered ones.
    assert plan.intent == "exchange_item"
    assert BOOTS_AND_BOTTLE in plan.text and CAMERA_AND_PUZZLE in plan.text
    assert JAMES_SHIPPED not in plan.text
    plan = turn(BOOTS_AND_BOTTLE, state=state)
    assert "Which would you like to exchange" in plan.text
    plan = turn("the hiking boots", state=state)
    assert "Hiking Boots" in plan.text and "Available: 1." in plan.text
    assert state["awaiting"] == "exchange_variant"
    plan = turn("1", state=state)
    assert "To confirm: exchange from order" in plan.text and "→" in plan.text
    assert "same product in another option" in plan.text
    assert "prepaid shipping label" in plan.text  # the demo profile's return_shipping
    assert "price difference" in plan.text or "no price difference" in plan.text
    action = state["pending_action"]
    assert action["type"] == "exchange" and not ReturnRequest.objects.exists()

    plan = turn("yes", state=state)
    assert plan.actions == ["performed:exchange"]
    request = ReturnRequest.objects.get(order__order_id=BOOTS_AND_BOTTLE)
    (swap,) = request.items
    assert request.kind == "exchange" and swap["name"] == "Hiking Boots"
    assert swap["new_item_id"] == next(iter(action["exchanges"].values()))
    assert str(request.amount) == f"{swap['new_price'] - swap['price']:.2f}"
    assert Order.objects.get(order_id=BOOTS_AND_BOTTLE).status == "exchange requested"


def test_only_the_verified_shoppers_orders(seeded_shop: None) -> None:
    plan = turn(f"return order {BOOTS_AND_BOTTLE}", customer=MEI, state={})
    assert "couldn't find order" in plan.text and "Hiking Boots" not in plan.text
    state: dict[str, Any] = {}
    plan = turn(f"return order {BOOTS_AND_BOTTLE}", customer="", state=state)
    assert "verify your identity" in plan.text and state["pending_intent"] == "return_item"


def test_a_refused_cancel_of_a_delivered_order_offers_the_return(seeded_shop: None) -> None:
    for yes, lang in (("yes", "en"), ("是", "zh")):
        state: dict[str, Any] = {}
        refused = turn(f"cancel order {BOOTS_AND_BOTTLE}", state=state, lang=lang)
        assert "offer:return" in refused.actions and state["pending_offer"]["kind"] == "return"
        plan = turn(yes, state=state, lang=lang)
        assert plan.intent == "return_item" and state["awaiting"] == "return_items", lang
        assert "Hiking Boots" in plan.text and "Water Bottle" in plan.text
    assert not ReturnRequest.objects.exists()


# -- an order past the return window: a person, offered with Yes/No ------------------------
AARAV = "aarav_moore_6923"  # two delivered orders, both bought 53 days before the seed
NOAH = "noah_kovacs_1216"  # delivered #W8826221 (47 days) and #W3002300 (9 days), one pending
NOAH_RECENT = "#W3002300"
DECLINED = {"en": "I'll keep helping you myself", "zh": "我继续为您服务"}


def _agent_online() -> None:
    from django.contrib.auth import get_user_model

    from chatbot.handoff import presence_connect

    agent = get_user_model().objects.create_user("ana", password="x", is_staff=True)
    presence_connect(user_id=agent.pk)


@pytest.mark.parametrize(
    ("lang", "ask", "no"),
    [
        ("en", f"I'd like to return order {MOHAMED_OLD_DELIVERY}", "no"),
        ("en", f"I want to exchange something from {MOHAMED_OLD_DELIVERY}", "No thanks!"),
        ("zh", f"订单{MOHAMED_OLD_DELIVERY}要退货", "不用"),
        ("zh", f"订单{MOHAMED_OLD_DELIVERY}要退货", "不用了，谢谢"),
    ],
)
def test_past_the_window_a_person_is_offered_with_buttons_and_a_no_declines(
    seeded_shop: None, lang: str, ask: str, no: str
) -> None:
    state: dict[str, Any] = {}
    plan = turn(ask, customer=MOHAMED, state=state, lang=lang)
    assert plan.intent in ("return_item", "exchange_item"), plan.text
    # The offer is in the actions: the widget shows Yes/No, the dialogue waits for it.
    assert plan.actions == ["offer:human"] and "pending_handoff" in state, plan.text
    plan = turn(no, customer=MOHAMED, state=state, lang=lang)
    assert plan.intent == "handoff" and DECLINED[lang] in plan.text, plan.text
    assert plan.actions == [] and "pending_handoff" not in state


def test_past_the_window_a_yes_hands_over_or_offers_a_ticket(seeded_shop: None) -> None:
    state: dict[str, Any] = {}
    turn(f"I'd like to return order {MOHAMED_OLD_DELIVERY}", customer=MOHAMED, state=state)
    plan = turn("yes", customer=MOHAMED, state=state)
    # Nobody at the desk: the reply says so and the widget offers a ticket.
    assert "handoff:unavailable" in plan.actions, plan.text

    _agent_online()
    state = {}
    turn(f"订单{MOHAMED_OLD_DELIVERY}要退货", customer=MOHAMED, state=state, lang="zh")
    plan = turn("是", customer=MOHAMED, state=state, lang="zh")
    assert plan.actions == ["handoff:queue"]


def test_the_order_system_refusing_past_the_window_offers_a_person(seeded_shop: None) -> None:
    """The window ended between the confirmation and the "yes": the order system's
    refusal is said with the same offer."""
    old = Order.objects.get(order_id=MOHAMED_OLD_DELIVERY)
    state: dict[str, Any] = {
        "pending_action": {
            "type": "return",
            "order_id": MOHAMED_OLD_DELIVERY,
            "item_ids": [old.items[0]["item_id"]],
            "at": time.time(),
        }
    }
    plan = turn("yes", customer=MOHAMED, state=state)
    assert "outside our return window" in plan.text and plan.actions == ["offer:human"]
    assert "pending_handoff" in state and not ReturnRequest.objects.exists()


def test_which_order_offers_only_orders_inside_the_window(seeded_shop: None) -> None:
    # One of two delivered orders is inside the window: that one, no question.
    plan = turn("I want to return an item", customer=NOAH, state={})
    assert f"Order {NOAH_RECENT} has these items" in plan.text, plan.text
    # Both past it: said plainly, with a person offered, not a list to pick from.
    for lang, ask in (("en", "I want to return an item"), ("zh", "我想退货")):
        state: dict[str, Any] = {}
        plan = turn(ask, customer=AARAV, state=state, lang=lang)
        assert plan.choices == [] and state.get("awaiting") is None, plan.text
        assert plan.actions == ["offer:human"], plan.text
        assert ("return window" if lang == "en" else "退货期限") in plan.text
        plan = turn(
            "no thanks" if lang == "en" else "不需要", customer=AARAV, state=state, lang=lang
        )
        assert DECLINED[lang] in plan.text
