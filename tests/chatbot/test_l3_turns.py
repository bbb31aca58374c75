"""L3 turns end to end through the WebSocket consumer, with real models and servers:
the done frame says why a fallback answered, nothing is lost, rate limits answer
``rate_limited`` and still store the message, the budget shows in the admin."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.utils import timezone

from chatbot.models import Conversation, Message
from inference import registry, state
from inference.breaker import BreakerState, breaker_for
from tests.servers import remote
from tests.shopper import connect, frames_until_end, send, shown

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.models,
    pytest.mark.usefixtures("isolated_state"),
]
L3_QUESTION = "Which is better for hiking, boots or trail shoes?"


async def ask(comm: WebsocketCommunicator, text: str, cid: str) -> list[dict[str, Any]]:
    await send(comm, text, cid)
    return await frames_until_end(comm, wait_s=180, turn_errors_only=True)


@pytest.fixture
def small_replies(settings: Any) -> None:
    settings.TIERDESK_L3_MAX_TOKENS = 8


async def test_rate_limited_message_is_stored_and_answered_with_retry_after(
    seeded_shop: None, settings: Any
) -> None:
    settings.TIERDESK_RATE_PER_SESSION = "2/minute"
    comm, _ = await connect()
    for cid in ("a", "b"):
        frames = await ask(comm, "hello", cid)
        assert frames[-1]["type"] == "done"
    await comm.send_json_to({"type": "message", "id": "c", "text": "hello again"})
    ack = await comm.receive_json_from(timeout=10)
    error = await comm.receive_json_from(timeout=10)
    assert ack["type"] == "ack" and error["type"] == "error"
    assert error["code"] == "rate_limited" and error["reply_to"] == "c"
    assert 1 <= error["retry_after"] <= 60 and error["message_id"] == ack["message_id"]
    assert await comm.receive_nothing(timeout=0.3)
    stored = await Message.objects.filter(role="user").acount()
    assert stored == 3  # the limited message is stored anyway
    await comm.disconnect()


async def test_l3_hang_falls_back_and_the_done_frame_says_why(
    seeded_shop: None, model_server: Any, fallback_model: Any, small_replies: None
) -> None:
    backend = remote(model_server.url)
    registry.register("large", backend)
    try:
        model_server.pause()
        comm, _ = await connect()
        frames = await ask(comm, L3_QUESTION, "q1")
        done = frames[-1]
        assert done["type"] == "done" and done["tier"] == "L3"
        assert done["fallback"] == {"reason": "timeout"}
        assert done["model"] == fallback_model.model_id and shown(frames).strip()
        assert done["first_chunk_ms"] >= 500
        reply = await Message.objects.aget(pk=done["message_id"])
        assert reply.status == "complete" and reply.metadata["fallback"] == {"reason": "timeout"}
        await comm.disconnect()
    finally:
        registry.unregister("large")
        backend.close()


async def test_l3_killed_mid_stream_replaces_the_bubble_and_loses_nothing(
    seeded_shop: None, model_server: Any, fallback_model: Any, settings: Any
) -> None:
    settings.TIERDESK_L3_FIRST_TOKEN_TIMEOUT_MS = 60000  # the healthy start must not time out
    settings.TIERDESK_L3_MAX_TOKENS = 30
    # The kill must land mid-reply, after 3 chunks are shown: the grounded guard shows
    # only whole, backed sentences (maybe none of 30 tokens), so it is off here; what
    # is under test is the restart, not the grounding (tests/chatbot/test_l3_grounded.py).
    settings.TIERDESK_L3_GROUNDING_GUARD = False
    # A long read timeout: the failure under test is the kill, not a slow token.
    backend = remote(model_server.url, read_timeout_s=300)
    registry.register("large", backend)
    try:
        comm, _ = await connect()
        await comm.send_json_to(
            {"type": "message", "id": "k", "text": L3_QUESTION + " Explain in detail."}
        )
        frames = []
        chunks = 0
        while True:
            frame = await comm.receive_json_from(timeout=180)
            frames.append(frame)
            if frame["type"] == "chunk":
                chunks += 1
                if chunks == 3:
                    model_server.kill()  # kill -9 the L3 server mid-stream
            if frame["type"] in ("done", "error") and frame["type"] != "ack":
                break
        done = frames[-1]
        assert done["type"] == "done", done
        assert done["fallback"]["reason"] == "upstream_disconnected"
        assert done["fallback"]["after_chunks"] >= 3
        assert any(f["type"] == "replace" for f in frames)
        assert done["model"] == fallback_model.model_id and shown(frames).strip()
        reply = await Message.objects.aget(pk=done["message_id"])
        assert reply.status == "complete" and reply.text == shown(frames)
        assert await Message.objects.filter(role="user", client_id="k").aexists()
        await comm.disconnect()
    finally:
        registry.unregister("large")
        backend.close()


async def test_session_over_budget_gets_the_small_model_and_admin_shows_it(
    seeded_shop: None, remote_large: Any, fallback_model: Any, small_replies: None, client: Any
) -> None:
    comm, hello = await connect()
    conversation = await Conversation.objects.aget(public_id=hello["conversation"])

    def spend() -> None:
        # Earlier turns of this session: 5,000 tokens within the last 10 minutes.
        for minutes, tokens in ((9, 2000), (5, 2000), (1, 1000)):
            msg = Message.objects.create(
                conversation=conversation,
                role="bot",
                status="complete",
                text="...",
                prompt_tokens=tokens - 100,
                completion_tokens=100,
            )
            Message.objects.filter(pk=msg.pk).update(
                created_at=timezone.now() - timedelta(minutes=minutes)
            )

    await database_sync_to_async(spend)()
    frames = await ask(comm, L3_QUESTION, "q")
    done = frames[-1]
    assert done["tier"] == "L3" and done["fallback"] == {"reason": "session_budget"}
    assert done["model"] == fallback_model.model_id and shown(frames).strip()
    await comm.disconnect()

    def admin_page() -> str:
        from django.contrib.auth.models import User

        admin = User.objects.create_superuser("boss", "boss@example.com", "pw")
        client.force_login(admin)
        url = f"/admin/chatbot/conversation/{conversation.pk}/change/"
        response = client.get(url)
        assert response.status_code == 200
        return response.content.decode()

    page = await database_sync_to_async(admin_page)()
    assert "token budget" in page.lower() and "TRIPPED" in page


async def test_redis_stopped_and_started_again(
    seeded_shop: None, remote_large: Any, private_redis: Any, settings: Any
) -> None:
    """Breaker, limits and cache live in a Redis of our own; it goes away mid-session.
    Everything fails open (answers keep coming), then uses Redis again once it's back."""
    settings.TIERDESK_L3_FIRST_TOKEN_TIMEOUT_MS = 60000
    settings.TIERDESK_L3_MAX_TOKENS = 8
    comm, _ = await connect()
    first = await ask(comm, L3_QUESTION, "r1")
    assert first[-1]["type"] == "done" and first[-1]["fallback"] is None
    private_redis.stop()
    during = await ask(comm, "Compare the boots versus the sandals for me.", "r2")
    assert during[-1]["type"] == "done" and shown(during).strip()
    assert during[-1]["fallback"] is None  # fail open: the breaker let L3 through
    private_redis.start()
    await asyncio.sleep(settings.TIERDESK_STATE_REDIS_RETRY_S + 0.1)
    for _ in range(50):  # bounded: Redis answers again within a few seconds
        try:
            await state.run(lambda r: r.ping())
            break
        except state.RedisUnavailable:
            await asyncio.sleep(settings.TIERDESK_STATE_REDIS_RETRY_S + 0.1)
    # Back: the breaker's state is in Redis again, visible to every process.
    breaker = breaker_for("large")
    permit = await breaker.allow()
    for _ in range(settings.TIERDESK_BREAKER_ERROR_LIMIT):
        await breaker.record_failure(permit)
    raw = await state.run(lambda r: r.get(breaker.keys[1]))
    assert raw is not None and await breaker.current() == BreakerState.OPEN
    after = await ask(comm, "Which is cheaper, the boots or the sandals?", "r3")
    assert after[-1]["fallback"] == {"reason": "breaker_open"}
    stored = await Message.objects.filter(role="user").acount()
    assert stored == 3 and not await Message.objects.filter(status="error").aexists()
    await comm.disconnect()
