"""L1 end to end over the WebSocket with the real Gemma 3 270M model (no fakes)."""

from __future__ import annotations

import pytest

from chatbot.models import Message
from chatbot.orders.identity import shopper_token_issue
from chatbot.orders.models import Order
from tests.shopper import connect, frames_until_end, send, shown

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.models]


@pytest.mark.parametrize(
    ("question", "status_word"),
    [("where is my order #W2611340?", "shipped"), ("我的订单W2611340到哪了？", "已发货")],
)
async def test_order_status_streams_real_facts(
    seeded_shop: None, model_files: None, question: str, status_word: str
) -> None:
    order = await Order.objects.aget(order_id="#W2611340")
    comm, _ = await connect()
    await comm.send_json_to(
        {"type": "identify", "token": shopper_token_issue(customer_id="james_li_5688")}
    )
    assert (await comm.receive_json_from(timeout=10))["type"] == "identified"
    await send(comm, question, "q1")
    assert (await comm.receive_json_from(timeout=10))["type"] == "ack"
    frames = await frames_until_end(comm, wait_s=120)
    done = frames[-1]
    text = shown(frames)
    assert done["type"] == "done", done
    assert done["tier"] == "L1" and done["intent"] == "order_status"
    assert done["model"] == "gemma3-270m-q4km" and done["tokens"]["completion"] > 0
    assert done["guard"] in {"passed", "template"}
    # Whatever the model wrote, the shopper sees the order's real facts.
    assert "W2611340" in text and status_word in text and order.carrier in text
    assert sum(1 for f in frames if f["type"] == "chunk") > 1
    stored = await Message.objects.aget(pk=done["message_id"])
    assert stored.status == "complete" and stored.text == text and stored.first_chunk_ms is not None
    await comm.disconnect()
