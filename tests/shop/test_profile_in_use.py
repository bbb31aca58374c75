"""Changing the shop profile's order-id forms changes what the router, the order
backend and the replies recognise and quote (real database, real router)."""

from __future__ import annotations

import pytest

from chatbot.orders import models
from chatbot.orders.backends import DjangoOrderService
from routing.order_ids import order_id_find, order_id_normalize
from routing.router import route_message
from routing.seed import intents_seed
from routing.templates import template_render
from shop.models import ShopProfile
from shop.values import demo_profile_values
from tests.chatbot.orders.conftest import (  # noqa: F401  (fixtures)
    JAMES,
    JAMES_PROCESSED,
    shop,
    shop_data_dir,
)


def _forms(forms: str) -> None:
    row = ShopProfile(**demo_profile_values() | {"order_id_formats": forms})
    row.full_clean()
    row.save()


@pytest.mark.django_db
def test_demo_form_until_the_profile_says_otherwise() -> None:
    assert order_id_find("where is W2611340?") == "#W2611340"
    _forms("#{3-6}")
    assert order_id_find("where is W2611340?") is None
    assert order_id_find("where is order 1001?") == "#1001"
    assert order_id_normalize("1001") == "#1001"


def test_a_shopify_shop_finds_its_orders(shop: DjangoOrderService) -> None:  # noqa: F811
    models.Order.objects.filter(order_id=JAMES_PROCESSED).update(order_id="#1001")
    _forms("#{3-6}\n{9}")
    facts = shop.order_get(customer_id=JAMES, order_id="1001")
    assert facts is not None and facts.order_id == "#1001"
    assert shop.order_get(customer_id=JAMES, order_id="#1001") is not None
    intents_seed()
    decision = route_message(text="where is my order #1001?", language="en")
    assert decision.slots.get("order_id") == "#1001"
    assert route_message(text="I was charged $1001", language="en").slots.get("order_id") is None
    for bare in ("#1001", "order 1001?", "订单号：1001", "000000123"):
        decision = route_message(text=bare, language="en")
        assert decision.intent == "order_status", (bare, decision.reason)
    assert route_message(text="12", language="en").reason.get("rule") != "bare-order-id"


@pytest.mark.django_db
def test_replies_quote_the_shops_id_form() -> None:
    hint = "Please check the number (it looks like {order_id_example})."
    assert "#W1234567" in template_render(hint, {})
    _forms("SO-{5}")
    assert template_render(hint, {}) == "Please check the number (it looks like SO-12345)."
