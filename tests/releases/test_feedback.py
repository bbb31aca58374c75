"""CSAT over the WebSocket: the rate frame, one rating per reply, changes counted once."""

from __future__ import annotations

from typing import Any

import pytest

from chatbot.models import Feedback, Message
from releases.models import MetricMinute
from tests.releases.conftest import FakeClock
from tests.shopper import Shopper

pytestmark = pytest.mark.django_db(transaction=True)


async def minute_totals() -> tuple[int, int]:
    rows = [r async for r in MetricMinute.objects.all()]
    return sum(r.ratings for r in rows), sum(r.satisfied for r in rows)


async def test_thumbs_are_stored_with_tier_intent_variant_and_changed_not_added(
    seeded_shop: None, fake_models: Any, release_clock: FakeClock
) -> None:
    shopper = await Shopper.connect()
    _text, done = await shopper.ask("hello")
    assert done["type"] == "done" and done["tier"] == "L1"
    rated = await shopper.rate("up", done["message_id"])
    assert rated == {
        "type": "rated",
        "message_id": done["message_id"],
        "value": "up",
        "changed": False,
    }
    feedback = await Feedback.objects.aget()
    reply = await Message.objects.aget(pk=done["message_id"])
    assert (feedback.kind, feedback.value, feedback.satisfied) == ("thumb", 1, True)
    assert (feedback.tier, feedback.intent, feedback.variant) == (
        reply.tier,
        reply.intent,
        "stable",
    )
    assert feedback.release_id == reply.release_id is not None
    assert await minute_totals() == (1, 1)

    # A minute later the shopper changes their mind: the same row, counted once.
    release_clock.advance(minutes=1)
    changed = await shopper.rate("down", done["message_id"])
    assert changed["changed"] is True
    assert await Feedback.objects.acount() == 1
    feedback = await Feedback.objects.aget()
    assert (feedback.value, feedback.satisfied, feedback.changes) == (0, False, 1)
    assert await minute_totals() == (1, 0)
    # Pressing the same thumb again changes nothing.
    assert (await shopper.rate("down", done["message_id"]))["changed"] is False
    assert await minute_totals() == (1, 0)

    # 1-5 for the conversation, then changed from 2 to 5.
    assert (await shopper.rate(2))["value"] == 2
    assert (await shopper.rate(5))["changed"] is True
    score = await Feedback.objects.aget(kind="score")
    assert (score.value, score.satisfied, score.message_id) == (5, True, None)
    assert score.tier == reply.tier and score.variant == "stable"
    assert await minute_totals() == (2, 1)

    # After a reconnect the widget redraws both ratings from hello.
    await shopper.close()
    again = await Shopper.connect(session=shopper.hello["session"])
    bot = [m for m in again.hello["history"] if m["role"] == "bot"]
    assert bot[0]["rating"] == "down" and again.hello["rating"] == 5
    await again.close()


async def test_rating_is_refused_for_messages_that_are_not_your_replies(
    seeded_shop: None, fake_models: Any
) -> None:
    alice = await Shopper.connect()
    _t, done = await alice.ask("hello")
    bob = await Shopper.connect()
    # No reply yet in Bob's conversation: nothing to rate.
    assert (await bob.rate(4))["code"] == "unknown_message"
    # Alice's reply is not Bob's to rate, and a shopper message is not a reply.
    assert (await bob.rate("up", done["message_id"]))["code"] == "unknown_message"
    assert (await alice.rate("up", done["reply_to"]))["code"] == "unknown_message"
    for bad in (
        {"value": "meh", "message_id": done["message_id"]},
        {"value": 6},
        {"value": True},
        {"value": "up", "message_id": "7"},
    ):
        await alice.comm.send_json_to({"type": "rate", **bad})
        assert (await alice.comm.receive_json_from())["code"] == "bad_field"
    assert await Feedback.objects.acount() == 0
    await alice.close()
    await bob.close()
