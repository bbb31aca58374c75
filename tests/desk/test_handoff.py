"""Human handoff end to end over the real ASGI app: a shopper asks for a person, an
agent at the desk claims the conversation, they write both ways, the agent resolves
and the bot answers again. Real PostgreSQL and the Redis channel layer.

The bot's own replies use the recording fake models (``fake_models``): what is under
test is the handoff, not the wording of a model.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from channels.db import database_sync_to_async

from chatbot.models import Conversation, Message
from desk.models import AuditEvent, Note
from tests.desk.conftest import desk_open, frame_of, user_make
from tests.shopper import connect, frames_until_end, send, shown

pytestmark = pytest.mark.django_db(transaction=True)


async def ask(comm: Any, text: str, cid: str) -> list[dict[str, Any]]:
    await send(comm, text, cid)
    return await frames_until_end(comm)


async def test_shopper_asks_for_a_person_agent_claims_talks_and_resolves(
    seeded_shop: None, fake_models: Any
) -> None:
    agent = await database_sync_to_async(user_make)("sam", first_name="Sam")
    async with desk_open(agent) as desk:
        inbox = await frame_of(desk, "inbox")
        assert inbox["queue"] == [] and inbox["mine"] == []

        shopper, hello = await connect()
        assert hello["handoff"] is None
        offer = await ask(shopper, "I want to talk to a human", "m1")
        assert offer[-1]["intent"] == "handoff" and "offer:human" in offer[-1]["actions"]
        assert "person" in shown(offer)
        # Nothing is queued before the shopper confirms.
        assert await Conversation.objects.filter(handoff="queued").acount() == 0

        confirmed = await ask(shopper, "yes", "m2")
        queued = [f for f in confirmed if f["type"] == "handoff"]
        assert queued == [
            {"type": "handoff", "status": "queued", "position": 1, "wait_s": 240, "language": "en"}
        ]
        assert "number 1 in the queue" in shown(confirmed)

        # The desk sees it appear live, with the last messages and the language.
        inbox = await frame_of(desk, "inbox")
        while not inbox["queue"]:
            inbox = await frame_of(desk, "inbox")
        item = inbox["queue"][0]
        assert item["language"] == "en"
        # The inbox is published when the conversation is queued, which may be before
        # or after the bot's "you are number 1" is stored: the shopper's side is there.
        assert [m["role"] for m in item["last"]].count("user") >= 2
        assert any(m["text"] == "I want to talk to a human" for m in item["last"])
        conversation_id = item["id"]

        await desk.send_json_to({"type": "claim", "conversation": conversation_id})
        result = await frame_of(desk, "result", action="claim")
        assert result["ok"] is True
        detail = await frame_of(desk, "conversation")
        assert (
            detail["mine"] is True and detail["messages"][0]["text"] == "I want to talk to a human"
        )
        joined = await shopper.receive_json_from(timeout=10)
        assert joined == {"type": "handoff", "status": "claimed", "agent": "Sam"}

        # Shopper -> agent: stored and acked as usual, relayed to the desk, no bot turn.
        await shopper.send_json_to({"type": "typing"})
        assert (await frame_of(desk, "typing"))["who"] == "shopper"
        await send(shopper, "my parcel arrived broken", "m3")
        ack = await shopper.receive_json_from(timeout=10)
        assert ack["type"] == "ack" and ack["answering"] is False and ack["human"] is True
        relayed = await frame_of(desk, "message", role="user")
        assert relayed["text"] == "my parcel arrived broken"

        # Agent -> shopper, with the agent's display name; typing first.
        await desk.send_json_to({"type": "typing", "conversation": conversation_id})
        assert await shopper.receive_json_from(timeout=10) == {
            "type": "typing",
            "who": "agent",
            "agent": "Sam",
        }
        await desk.send_json_to(
            {"type": "send", "conversation": conversation_id, "text": "Sorry! I'll send a new one."}
        )
        to_shopper = await shopper.receive_json_from(timeout=10)
        assert to_shopper["type"] == "message" and to_shopper["role"] == "agent"
        assert to_shopper["agent"] == "Sam" and to_shopper["text"] == "Sorry! I'll send a new one."

        # An internal note reaches the desk, never the shopper.
        await desk.send_json_to(
            {"type": "note", "conversation": conversation_id, "text": "replacement approved"}
        )
        assert (await frame_of(desk, "note"))["text"] == "replacement approved"
        assert await shopper.receive_nothing(timeout=0.5)
        assert await Note.objects.filter(conversation_id=conversation_id).acount() == 1

        # No bot reply was written while the person held the conversation.
        assert not await Message.objects.filter(
            role="bot", reply_to__text="my parcel arrived broken"
        ).aexists()

        await desk.send_json_to({"type": "resolve", "conversation": conversation_id})
        assert (await frame_of(desk, "result", action="resolve"))["ok"] is True
        resolved = await shopper.receive_json_from(timeout=10)
        assert resolved == {"type": "handoff", "status": "resolved", "agent": "Sam"}

        # The bot answers again.
        after = await ask(shopper, "hello", "m4")
        assert after[-1]["type"] == "done" and after[-1]["tier"] == "L1"

        # The shopper rates the person: CSAT counted for the human tier.
        agent_message = await Message.objects.aget(role="agent")
        await shopper.send_json_to({"type": "rate", "message_id": agent_message.pk, "value": "up"})
        assert (await shopper.receive_json_from(timeout=10))["type"] == "rated"

        # A reload shows the person's message in the history.
        session = hello["session"]
        await shopper.disconnect()
        again, hello2 = await connect(session)
        agents = [m for m in hello2["history"] if m["role"] == "agent"]
        assert [m["text"] for m in agents] == ["Sorry! I'll send a new one."]
        await again.disconnect()

    actions = [
        a
        async for a in AuditEvent.objects.filter(conversation_id=conversation_id)
        .order_by("created_at", "id")
        .values_list("action", flat=True)
    ]
    assert actions == ["claim", "resolve"]
    conversation = await Conversation.objects.aget(pk=conversation_id)
    assert conversation.handoff == "resolved" and conversation.handoff_first_reply_at


async def test_zh_request_and_no(seeded_shop: None, fake_models: Any) -> None:
    agent = await database_sync_to_async(user_make)("li")
    async with desk_open(agent):
        shopper, _ = await connect()
        offer = await ask(shopper, "转人工", "z1")
        assert offer[-1]["intent"] == "handoff" and "人工" in shown(offer)
        declined = await ask(shopper, "不用", "z2")
        assert "继续" in shown(declined)
        assert await Conversation.objects.filter(handoff="queued").acount() == 0
        await shopper.disconnect()


async def test_a_phrasing_only_the_scorer_knows_and_a_decline_in_a_real_turn(
    seeded_shop: None, fake_models: Any
) -> None:
    # routing/handoff_detect.py: the rule has no pattern for the first; the second names a
    # person and the rule matched it before the vetoes.
    agent = await database_sync_to_async(user_make)("mo")
    async with desk_open(agent):
        shopper, _ = await connect()
        offer = await ask(shopper, "i'd rather deal with a person than a bot", "r1")
        assert offer[-1]["intent"] == "handoff" and "offer:human" in offer[-1]["actions"]
        assert await ask(shopper, "no", "r2")
        declined = await ask(shopper, "I don't need a human, just tell me the return window", "r3")
        assert declined[-1]["intent"] != "handoff"
        assert await Conversation.objects.filter(handoff="queued").acount() == 0
        await shopper.disconnect()


async def test_agent_cannot_write_to_a_conversation_it_did_not_claim(
    seeded_shop: None, fake_models: Any
) -> None:
    agent = await database_sync_to_async(user_make)("kim")
    async with desk_open(agent) as desk:
        shopper, _ = await connect()
        await ask(shopper, "agent please", "a1")
        await ask(shopper, "yes", "a2")
        conversation = await Conversation.objects.aget(handoff="queued")
        await desk.send_json_to({"type": "send", "conversation": conversation.pk, "text": "hi"})
        error = await frame_of(desk, "error")
        assert error["code"] == "forbidden"
        assert not await Message.objects.filter(role="agent").aexists()
        await shopper.disconnect()


async def test_agent_typing_burst_is_relayed_in_order(seeded_shop: None, fake_models: Any) -> None:
    """Ten quick agent messages arrive at the shopper complete and in order."""
    agent = await database_sync_to_async(user_make)("ana", first_name="Ana")
    async with desk_open(agent) as desk:
        shopper, _ = await connect()
        await ask(shopper, "talk to a person please", "b1")
        await ask(shopper, "yes", "b2")
        conversation = await Conversation.objects.aget(handoff="queued")
        await desk.send_json_to({"type": "claim", "conversation": conversation.pk})
        assert (await frame_of(desk, "result", action="claim"))["ok"]
        assert (await shopper.receive_json_from(timeout=10))["status"] == "claimed"
        for i in range(10):
            await desk.send_json_to(
                {"type": "send", "conversation": conversation.pk, "text": f"line {i}"}
            )
        texts = [(await shopper.receive_json_from(timeout=10))["text"] for _ in range(10)]
        assert texts == [f"line {i}" for i in range(10)]
        await asyncio.sleep(0)
        await shopper.disconnect()


async def test_waiting_shoppers_move_up_when_the_one_ahead_is_claimed(
    seeded_shop: None, fake_models: Any
) -> None:
    agent = await database_sync_to_async(user_make)("mo")
    async with desk_open(agent) as desk:
        first, _ = await connect()
        second, _ = await connect()
        await ask(first, "human please", "f1")
        await ask(first, "yes", "f2")
        await ask(second, "human please", "s1")
        queued = [f for f in await ask(second, "yes", "s2") if f["type"] == "handoff"]
        assert queued[0]["position"] == 2
        ahead = await Conversation.objects.filter(handoff="queued").order_by("pk").afirst()
        assert ahead is not None
        await desk.send_json_to({"type": "claim", "conversation": ahead.pk})
        assert (await frame_of(desk, "result", action="claim"))["ok"]
        moved = await frame_of(second, "handoff")
        assert moved["status"] == "queued" and moved["position"] == 1
        await first.disconnect()
        await second.disconnect()


async def test_the_bot_offers_a_person_when_stuck(seeded_shop: None, fake_models: Any) -> None:
    """A thumbs-down then the same question again, or "that's wrong": a person is
    offered (and a "yes" queues); with nobody online nothing is offered."""
    shopper, _ = await connect()
    first = await ask(shopper, "how much is shipping to Boston", "w1")
    assert "offer:human" not in first[-1]["actions"]
    await shopper.send_json_to(
        {"type": "rate", "message_id": first[-1]["message_id"], "value": "down"}
    )
    assert (await shopper.receive_json_from(timeout=10))["type"] == "rated"
    # Nobody online: the repeat is answered as usual.
    again = await ask(shopper, "how much is shipping to Boston?", "w2")
    assert "offer:human" not in again[-1]["actions"]

    agent = await database_sync_to_async(user_make)("vic")
    async with desk_open(agent):
        await shopper.send_json_to(
            {"type": "rate", "message_id": again[-1]["message_id"], "value": "down"}
        )
        assert (await shopper.receive_json_from(timeout=10))["type"] == "rated"
        offered = await ask(shopper, "how much is shipping to boston", "w3")
        assert offered[-1]["intent"] == "handoff" and "offer:human" in offered[-1]["actions"]
        assert "talk to a person" in shown(offered)
        wrong = await ask(shopper, "that's wrong", "w4")
        assert "offer:human" in wrong[-1]["actions"]
        queued = await ask(shopper, "yes", "w5")
        assert [f["status"] for f in queued if f["type"] == "handoff"] == ["queued"]
    await shopper.disconnect()


async def test_a_queued_shoppers_messages_go_to_the_person_not_the_bot(
    seeded_shop: None, fake_models: Any
) -> None:
    """While waiting for a person, what the shopper writes reaches the desk and the
    conversation the agent will open; the bot answers none of it (no second offer of
    a person, nothing the agent would have to contradict)."""
    agent = await database_sync_to_async(user_make)("lin", first_name="Lin")
    async with desk_open(agent) as desk:
        shopper, _ = await connect()
        await ask(shopper, "talk to a person please", "q1")
        await ask(shopper, "yes", "q2")
        conversation = await Conversation.objects.aget(handoff="queued")
        replies_before = await Message.objects.filter(role="bot").acount()
        for cid, text in (("q3", "my parcel arrived damaged"), ("q4", "can I speak to someone")):
            await send(shopper, text, cid)
            ack = await frame_of(shopper, "ack", id=cid)
            assert ack["answering"] is False and ack["human"] is True
            assert ack["held"] == "queued"
            # The desk's queue shows it live, in the conversation's last messages.
            inbox = await frame_of(desk, "inbox")
            while not any(m["text"] == text for q in inbox["queue"] for m in q["last"]):
                inbox = await frame_of(desk, "inbox")
            assert inbox["queue"][0]["id"] == conversation.pk
        # No bot reply follows, and nothing offers a person again.
        assert await shopper.receive_nothing(timeout=2)
        assert await Message.objects.filter(role="bot").acount() == replies_before
        stored = [
            m.text async for m in Message.objects.filter(conversation=conversation, role="user")
        ]
        assert stored[-2:] == ["my parcel arrived damaged", "can I speak to someone"]
        await shopper.disconnect()
