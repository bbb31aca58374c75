"""L1 order flows state the shop's rule: a question about the rule asked
about "my order" ("can I still return my order after 30 days?") that the classifier
sends to an order flow gets the rule from the knowledge base (an approved card, or
the article's own sentences) before the flow's own step, with its citation.

Real PostgreSQL, the real embedder and retrieval; the decision is built by hand so
the test is about the flow, not about what the classifier learned.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from chatbot.answerers.l1 import L1Answerer
from chatbot.dialogue import TurnContext
from knowledge import cards, index
from routing import types as rt
from routing.templates import template_get
from tests.kb import approved_article

pytestmark = pytest.mark.django_db

ARTICLE = """# Returns and accounts

## How long do I have to return an order?

You can return unworn items within 30 days of delivery. Gold members have 90 days.

## Forgot your username

We can tell you your username once you give us three of these four details: your full
name, zip code, phone number and email address.
"""


@pytest.fixture
def kb(seeded_shop: None, settings: Any) -> Iterator[None]:
    approved_article(settings, title="Returns and accounts", text=ARTICLE)
    yield
    index.reset()
    cards.cards_reset()


def plan(text: str, intent: str, *, customer: str = "", state: dict[str, Any] | None = None):
    ctx = TurnContext(
        text=text,
        language="en",
        state=state if state is not None else {},
        customer_id=customer,
        history=[],
    )
    decision = rt.RouteDecision(
        tier=rt.L1, intent=intent, confidence=0.9, reason={"kind": "classifier"}
    )
    return L1Answerer().plan(ctx, decision), ctx


def test_a_rule_question_sent_to_an_order_flow_gets_the_rule_then_the_flow(kb: None) -> None:
    reply, ctx = plan("can I still return my order after 30 days?", rt.RETURN_ITEM)
    assert reply.tier == rt.L1 and reply.intent == rt.RETURN_ITEM
    assert reply.text.startswith("You can return unworn items within 30 days of delivery.")
    # The flow's own step follows, worded for after an answer, and still waits for it.
    also = template_get(intent="dialogue", key="ask_identity_also", language="en")
    assert reply.text.endswith(also)
    assert ctx.state["awaiting"] == "identity" and ctx.state["pending_intent"] == rt.RETURN_ITEM
    # Cited: the card when retrieval matches it this well, else the passage.
    assert reply.cited()[0]["heading"] == "How long do I have to return an order?"
    assert reply.generation is None  # the article's words, no model


def test_account_help_answers_from_the_articles_not_the_generic_template(kb: None) -> None:
    reply, _ = plan("I forgot my username, what do you need from me?", rt.ACCOUNT_HELP)
    assert "three of these four details" in reply.text
    generic = template_get(intent=rt.ACCOUNT_HELP, key="default", language="en")
    assert generic not in reply.text  # the flow's generic reply
    assert reply.cited()


def test_the_flow_alone_when_the_kb_has_nothing_or_an_order_is_named(kb: None) -> None:
    ask = template_get(intent="dialogue", key="ask_identity", language="en")
    reply, _ = plan("cancel my order #W2611340 please", rt.CANCEL_ORDER)
    assert reply.text == ask and not reply.cited()
    reply, _ = plan("has my refund for the blue lamp gone through", rt.REFUND_STATUS)
    assert reply.text == ask and not reply.cited()


def test_a_general_question_with_no_rule_says_the_articles_dont_tell(kb: None) -> None:
    """A question such as "can you deliver on a Sunday?" lands in the delivery flow and
    the knowledge base has no rule for it: the reply says so (a person can tell) before
    the flow's step, instead of only asking who the shopper is."""
    from knowledge.answer import NO_RULE

    reply, ctx = plan("can you deliver on a sunday?", rt.DELIVERY_TIME)
    also = template_get(intent="dialogue", key="ask_identity_also", language="en")
    assert reply.text == f"{NO_RULE['en']}\n\n{also}"
    assert not reply.cited() and reply.generation is None
    assert ctx.state["awaiting"] == "identity"  # the flow still takes an order if one comes
    # A request, or a question about the shopper's own order, keeps the flow's reply.
    ask = template_get(intent="dialogue", key="ask_identity", language="en")
    assert plan("I want to cancel", rt.CANCEL_ORDER)[0].text == ask
    assert plan("when will my package arrive?", rt.DELIVERY_TIME)[0].text == ask
