"""TIERDESK_ROUTING: ``l3_only`` sends every message to the large tier (routing off)."""

from __future__ import annotations

import pytest
from django.test import override_settings

from chatbot.dialogue import Dialogue, TurnContext
from routing.types import L1, L3, ORDER_STATUS

pytestmark = pytest.mark.usefixtures("seeded")

TEXT = "where is my order 1234"


def plan_for(routing: str) -> tuple[str, str, str]:
    ctx = TurnContext(text=TEXT, language="en", state={}, customer_id="", history=[])
    with override_settings(TIERDESK_ROUTING=routing):
        plan = Dialogue(ctx).plan()
    return plan.tier, plan.intent, plan.role


def test_tiered_keeps_an_l1_message_on_l1() -> None:
    tier, intent, _role = plan_for("tiered")

    assert (tier, intent) == (L1, ORDER_STATUS)


def test_l3_only_sends_an_l1_message_to_l3() -> None:
    tier, intent, role = plan_for("l3_only")

    assert (tier, role) == (L3, "large")
    assert intent == ORDER_STATUS  # what the router would have chosen is still recorded
