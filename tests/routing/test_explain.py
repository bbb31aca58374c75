"""Explainability: the routed message stores tier, intent, confidence and reason, and
the admin conversation view shows them readably."""

from __future__ import annotations

import html

import pytest
from django.test import Client

from chatbot.models import Conversation, Message
from routing.explain import route_reason_text
from routing.router import route_message

pytestmark = pytest.mark.usefixtures("seeded")


def test_rule_and_classifier_reasons_read_well() -> None:
    rule = route_message(text="laptop vs tablet for college?", language="en")
    text = route_reason_text(
        tier=rule.tier, intent=rule.intent, confidence=rule.confidence, reason=rule.reason
    )
    assert text.startswith("L3 · complex_question · 1.00 — rule “comparison” (regex)")

    learned = route_message(text="where is my order #W2611340", language="en")
    text = route_reason_text(
        tier=learned.tier,
        intent=learned.intent,
        confidence=learned.confidence,
        reason=learned.reason,
    )
    assert "— classifier: order_status " in text


def test_low_confidence_explains_the_clarifying_question() -> None:
    text = route_reason_text(
        tier="clarify",
        intent="out_of_scope",
        confidence=0.31,
        reason={
            "kind": "clarify",
            "why": "low_confidence",
            "candidate": "cancel_order",
            "threshold": 0.45,
            "top": [["cancel_order", 0.31], ["change_address", 0.22]],
        },
    )
    assert "confidence below 0.45 (best guess cancel_order)" in text


def test_admin_conversation_view_shows_why(admin_client: Client) -> None:
    decision = route_message(text="which is better, the fleece or the down jacket?", language="en")
    conversation = Conversation.objects.create()
    Message.objects.create(
        conversation=conversation,
        role=Message.Role.USER,
        text="which is better, the fleece or the down jacket?",
        status=Message.Status.COMPLETE,
        tier=decision.tier,
        intent=decision.intent,
        confidence=decision.confidence,
        route_reason=decision.reason,
    )
    response = admin_client.get(f"/admin/chatbot/conversation/{conversation.pk}/change/")
    assert response.status_code == 200
    page = html.unescape(response.content.decode())
    assert "why this tier" in page.lower()
    assert "rule “comparison” (regex) matched" in page
