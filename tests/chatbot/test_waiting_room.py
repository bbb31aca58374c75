"""Issue #16 item 3: load never becomes an error. A connection beyond the process's
capacity is accepted and waits, told its place in line; a message over the global
bucket waits its turn instead of a ``rate_limited`` error. Real consumer, limits and
templates (the messages are greetings: no model is involved)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from chatbot.limits import WaitingRoom
from tests.shopper import connect, frames_until_end, send, shown

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("isolated_state")]


async def test_beyond_capacity_a_shopper_waits_in_line_and_is_served(
    seeded_shop: None, settings: Any
) -> None:
    settings.TIERDESK_WS_ACTIVE_MAX = 1
    first, _ = await connect()
    second, _ = await connect()  # accepted: never a refused handshake
    assert await second.receive_json_from(timeout=5) == {
        "type": "busy",
        "reason": "sessions",
        "position": 1,
    }
    third, _ = await connect()
    assert (await third.receive_json_from(timeout=5))["position"] == 2
    # A message sent while in line is stored and acked, and answered once served.
    await send(second, "hello", "w1")
    ack = await second.receive_json_from(timeout=5)
    assert ack["type"] == "ack" and ack["answering"] is True
    assert await second.receive_nothing(timeout=0.5)
    await first.disconnect()
    assert (await second.receive_json_from(timeout=5))["position"] == 0
    frames = await frames_until_end(second, wait_s=30)
    assert frames[-1]["type"] == "done" and shown(frames)
    assert not [f for f in frames if f["type"] == "error"]
    # The line moved: the third shopper is now first in it.
    assert (await third.receive_json_from(timeout=5))["position"] == 1
    await second.disconnect()
    assert (await third.receive_json_from(timeout=5))["position"] == 0
    await third.disconnect()


async def test_over_the_global_bucket_a_message_waits_its_turn(
    seeded_shop: None, settings: Any
) -> None:
    settings.TIERDESK_RATE_BUCKET_PER_S = 2.0
    settings.TIERDESK_RATE_BURST = 1.0
    comm, _ = await connect()
    await send(comm, "hello", "g1")
    assert (await comm.receive_json_from(timeout=5))["type"] == "ack"
    first = await frames_until_end(comm, wait_s=30)
    assert first[-1]["type"] == "done"
    await send(comm, "hi again", "g2")  # the bucket's one token is spent
    frames = await frames_until_end(comm, wait_s=30)
    kinds = [f["type"] for f in frames]
    assert "error" not in kinds and frames[-1]["type"] == "done", frames
    busy = [f for f in frames if f["type"] == "busy"]
    assert busy and busy[0] == {"type": "busy", "reason": "load", "position": 1}
    assert busy[-1]["position"] == 0
    await comm.disconnect()


async def test_per_session_limit_is_still_an_error(seeded_shop: None, settings: Any) -> None:
    """A shopper's own limit is not load: it still answers rate_limited."""
    settings.TIERDESK_RATE_PER_SESSION = "1/minute"
    comm, _ = await connect()
    await send(comm, "hello", "s1")
    await frames_until_end(comm, wait_s=30)
    await send(comm, "hello again", "s2")
    assert (await comm.receive_json_from(timeout=5))["type"] == "ack"
    error = await comm.receive_json_from(timeout=5)
    assert error["type"] == "error" and error["code"] == "rate_limited"
    await comm.disconnect()


async def test_a_shopper_leaving_the_line_frees_their_place() -> None:
    room = WaitingRoom(capacity=1)
    told: dict[str, list[int]] = {"b": [], "c": []}

    async def tell(who: str, position: int) -> None:
        told[who].append(position)

    a = await room.enter(lambda p: tell("a", p))
    b = await room.enter(lambda p: tell("b", p))
    c = await room.enter(lambda p: tell("c", p))
    assert a.done() and not b.done() and told == {"b": [1], "c": [2]}
    await room.leave(b)  # b gave up waiting
    assert told["c"][-1] == 1 and room.waiting == 1
    await room.leave(a)
    await asyncio.sleep(0)
    assert c.done() and told["c"][-1] == 0 and room.active == 1 and room.waiting == 0
