"""The L1 dialogue policy on the real demo shop data (no model: these replies are
deterministic, or we check the plan a model would phrase)."""

from __future__ import annotations

from typing import Any

import pytest

from chatbot.answerers.address_parse import parse_address
from chatbot.answerers.base import AnswerPlan
from chatbot.answerers.l1 import L1Plan
from chatbot.dialogue import Dialogue, TurnContext
from chatbot.orders.models import Order

pytestmark = pytest.mark.django_db

JAMES = "james_li_5688"  # owns #W2611340 (processed), #W4435622 (delivered)
MEI = "mei_patel_7272"  # owns #W9583042 and #W4082615 (pending)


def turn(
    text: str, *, customer: str = "", state: dict[str, Any] | None = None, lang: str = "en"
) -> tuple[AnswerPlan, TurnContext]:
    ctx = TurnContext(
        text=text,
        language=lang,
        state=state if state is not None else {},
        customer_id=customer,
        # A shopper given by id came with the shop's signed token (strong proof);
        # tests/chatbot/test_identity_proof.py covers the email-only shopper.
        identity="token" if customer else "",
        history=[],
    )
    return Dialogue(ctx).plan(), ctx


def test_order_status_is_phrased_from_real_facts(seeded_shop: None) -> None:
    plan, _ = turn("where is my order #W2611340?", customer=JAMES)
    assert plan.tier == "L1" and plan.intent == "order_status"
    assert plan.generation is not None and plan.role == "fast"
    order = Order.objects.get(order_id="#W2611340")
    assert "#W2611340" in plan.text and "shipped" in plan.text and order.carrier in plan.text
    assert isinstance(plan, L1Plan)
    assert plan.guard_facts is not None and "#W2611340" in plan.guard_required
    # The prompt carries the facts and ends where the model continues.
    assert plan.generation.prompt is not None and plan.generation.prompt.endswith("Reply:")
    assert "#W2611340" in plan.generation.prompt and plan.personal


def test_someone_elses_order_looks_like_a_missing_one(seeded_shop: None) -> None:
    foreign, _ = turn("where is order #W9583042", customer=JAMES)  # Mei's order
    missing, _ = turn("where is order #W0000001", customer=JAMES)
    assert foreign.generation is None and missing.generation is None
    assert foreign.text.replace("#W9583042", "X") == missing.text.replace("#W0000001", "X")
    assert "pending" not in foreign.text.lower()


def test_unverified_shopper_is_asked_to_verify_then_answered(
    seeded_shop: None, settings: Any
) -> None:
    # A shop that lets the typed identity read orders (off by default).
    settings.TIERDESK_CHAT_IDENTITY_READS = True
    state: dict[str, Any] = {}
    plan, ctx = turn("where is my order #W2611340", state=state)
    assert "verify" in plan.text.lower() and state["awaiting"] == "identity"
    plan, ctx = turn("it's james.li4495@example.com", state=state)
    assert ctx.verified is not None and ctx.verified.customer_id == JAMES
    assert plan.intent == "order_status" and "#W2611340" in plan.text


def test_wrong_identity_is_refused(seeded_shop: None) -> None:
    state: dict[str, Any] = {}
    turn("cancel my order #W9583042", state=state)
    plan, ctx = turn("I am James Li, zip 99999", state=state)
    assert ctx.verified is None and "couldn't find an account" in plan.text


def test_verification_by_name_and_zip(seeded_shop: None, settings: Any) -> None:
    # A shop that lets the typed identity read orders (off by default).
    settings.TIERDESK_CHAT_IDENTITY_READS = True
    state: dict[str, Any] = {}
    turn("has my refund come through for #W4082615", state=state)
    _, ctx = turn("Mei Patel 76165", state=state)
    assert ctx.verified is not None and ctx.verified.customer_id == MEI


def test_cancel_needs_an_explicit_yes(seeded_shop: None) -> None:
    state: dict[str, Any] = {}
    plan, _ = turn(
        "please cancel order #W9583042, I ordered it by mistake", customer=MEI, state=state
    )
    assert plan.actions == ["confirm"] and "yes" in plan.text.lower()
    assert Order.objects.get(order_id="#W9583042").status == "pending"
    # Anything but a clear yes drops the pending action.
    plan, _ = turn("actually what does shipping cost?", customer=MEI, state=state)
    assert "pending_action" not in state
    plan, _ = turn("yes", customer=MEI, state=state)
    assert Order.objects.get(order_id="#W9583042").status == "pending"
    assert not any(a.startswith("performed") for a in plan.actions)


def test_cancel_with_yes_cancels_and_no_keeps(seeded_shop: None) -> None:
    state: dict[str, Any] = {}
    turn("cancel #W9583042, no longer needed", customer=MEI, state=state)
    plan, _ = turn("no", customer=MEI, state=state)
    assert Order.objects.get(order_id="#W9583042").status == "pending"
    assert "haven't cancelled" in plan.text
    turn("cancel #W9583042, no longer needed", customer=MEI, state=state)
    plan, _ = turn("yes", customer=MEI, state=state)
    assert plan.actions == ["performed:cancel"]
    assert Order.objects.get(order_id="#W9583042").status == "cancelled"
    assert "#W9583042" in plan.text and "cancelled" in plan.text


def test_processed_order_cannot_be_cancelled(seeded_shop: None) -> None:
    state: dict[str, Any] = {}
    plan, _ = turn("cancel my order #W2611340", customer=JAMES, state=state)
    assert "can't be cancelled" in plan.text and "pending_action" not in state
    assert Order.objects.get(order_id="#W2611340").status == "processed"


def test_change_address_flow(seeded_shop: None) -> None:
    state: dict[str, Any] = {}
    plan, _ = turn("I need to change the address on #W4082615", customer=MEI, state=state)
    assert state["awaiting"] == "address"
    plan, _ = turn("12 Main St, Austin, TX 78701", customer=MEI, state=state)
    assert plan.actions == ["confirm"] and "12 Main St" in plan.text
    plan, _ = turn("yes", customer=MEI, state=state)
    order = Order.objects.get(order_id="#W4082615")
    assert order.address["zip"] == "78701" and plan.actions == ["performed:change_address"]


def test_chinese_order_status(seeded_shop: None) -> None:
    plan, _ = turn("我的订单W2611340到哪了", customer=JAMES, lang="zh")
    assert plan.intent == "order_status" and "已发货" in plan.text and "#W2611340" in plan.text


def test_out_of_scope_gets_a_clarifying_question(seeded_shop: None) -> None:
    plan, _ = turn("what's the weather in Paris tomorrow")
    assert plan.tier == "clarify" and plan.generation is None and "?" in plan.text
    assert plan.intent == "out_of_scope"


def test_knowledge_question_with_nothing_relevant_does_not_guess(seeded_shop: None) -> None:
    # The demo knowledge base is not seeded here: nothing clears the score threshold.
    # Nobody is online at the desk: no dead step, the ticket form straight away.
    question = "can I wash the wool sweater by hand, and how warm should the water be?"
    plan, _ = turn(question)
    assert plan.tier == "L2" and plan.generation is None
    assert "won't guess" in plan.text and "senior" not in plan.text
    assert "offer:L3" not in plan.actions and "handoff:unavailable" in plan.actions


def test_nothing_found_goes_straight_to_a_person(seeded_shop: None) -> None:
    """When the large tier has no records L2 lacked (no product named, no order of the
    shopper's), the offer is a person, and a "yes" queues; with a product named the
    large tier is still offered."""
    from django.contrib.auth import get_user_model

    from chatbot.handoff import presence_connect

    agent = get_user_model().objects.create_user("ana", password="x", is_staff=True)
    presence_connect(user_id=agent.pk)
    state: dict[str, Any] = {}
    plan, _ = turn("can I wash the wool sweater by hand?", state=state)
    assert plan.tier == "L2" and plan.actions == ["offer:human"]
    assert "won't guess" in plan.text and "person" in plan.text and "senior" not in plan.text
    plan, _ = turn("yes", state=state)
    assert plan.actions == ["handoff:queue"]

    plan, _ = turn("can I wash the yoga mat by hand?", state={})
    assert plan.tier == "L2" and "offer:L3" in plan.actions


def test_complex_questions_go_to_the_large_tier(seeded_shop: None) -> None:
    plan, _ = turn("Which is better for hiking, your boots or your trail shoes, and why?")
    assert plan.tier == "L3" and plan.role == "large" and plan.generation is not None
    assert plan.generation.messages is not None and plan.generation.messages[0].role == "system"


def test_address_parser(db: None) -> None:
    addr = parse_address("500 Oak Ave, Apt 4, Springfield, il 62704")
    assert (
        addr is not None and addr.address2 == "Apt 4" and addr.state == "IL" and addr.zip == "62704"
    )
    assert parse_address("somewhere nice") is None


def test_order_system_down_is_said_plainly(seeded_shop: None, settings: Any) -> None:
    # A real HTTP client against a closed port on 127.0.0.1: the shop's API is down.
    settings.ORDER_SERVICE = "chatbot.orders.backends.HttpOrderService"
    settings.TIERDESK_ORDER_API_URL = "http://127.0.0.1:9"
    settings.TIERDESK_ORDER_API_KEY = "k"
    settings.TIERDESK_ORDER_API_TIMEOUT_S = 1.0
    plan, _ = turn("where is my order #W2611340", customer=JAMES)
    assert plan.error_code == "order_system_unavailable"
    assert "order system" in plan.text and plan.generation is None
