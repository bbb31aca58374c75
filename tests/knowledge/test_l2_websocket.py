"""An L2 question end to end over the WebSocket with the real fallback model: the reply
streams, the done frame carries citations, the stored reply keeps them, and retrieval
ran in a worker thread, never on the event loop."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from channels.db import database_sync_to_async

from chatbot.models import Message
from knowledge import retrieval
from tests.shopper import connect, frames_until_end, send

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.models]


def _seed() -> None:
    from knowledge.seed import knowledge_seed

    knowledge_seed(ingest_now=True, keys=["en-boots-faq", "en-pricing-faq"])


async def test_l2_answer_streams_with_citations(
    seeded_shop: None, model_files: None, monkeypatch: Any
) -> None:
    await database_sync_to_async(_seed)()
    calls: list[tuple[str, bool]] = []
    real = retrieval.passages_retrieve

    def spy(**kwargs: Any) -> Any:
        # Records where retrieval ran; the real function does the work.
        try:
            asyncio.get_running_loop()
            on_loop = True
        except RuntimeError:
            on_loop = False
        calls.append((threading.current_thread().name, on_loop))
        return real(**kwargs)

    monkeypatch.setattr("knowledge.answer.passages_retrieve", spy)
    comm, _ = await connect()
    await send(comm, "are the boots waterproof?", "k1")
    frames = await frames_until_end(comm, wait_s=120)
    await comm.disconnect()
    done = frames[-1]
    assert done["type"] == "done", frames
    chunks = [f["text"] for f in frames if f["type"] == "chunk"]
    assert len(chunks) > 3 and "".join(chunks).strip()
    assert done["tier"] == "L2" and done["model"] and done["first_chunk_ms"] > 0
    citation = done["citations"][0]
    assert citation["title"] == "Boots FAQ" and citation["anchor"] == "are-the-boots-waterproof"
    assert "waterproof version" in citation["snippet"]
    assert calls and not any(on_loop for _, on_loop in calls)
    reply = await database_sync_to_async(Message.objects.get)(pk=done["message_id"])
    assert reply.metadata["citations"] == done["citations"]
    assert reply.metadata["retrieval"]["answered"] is True
    # Sentences are released only once checked, so nothing shown is ever withdrawn: no
    # replace frame, and what was streamed is what is stored.
    assert done["guard"] in ("passed", "trimmed", "extract", "abstained")
    assert not [f for f in frames if f["type"] == "replace"], frames
    assert reply.text == "".join(chunks)


async def test_an_invented_sentence_is_never_shown(
    seeded_shop: None, fake_models: dict[str, Any]
) -> None:
    """The fallback model is a fake here: a real one invents a claim only sometimes, and
    this test needs it every time. Retrieval, the guard and the consumer are real."""
    await database_sync_to_async(_seed)()
    fake_models["fallback"].replies = [
        "The Hiking Boots come in a waterproof version and a version that is not waterproof. "
        "Soak them overnight in warm water to soften new leather."
    ]
    comm, _ = await connect()
    await send(comm, "are the boots waterproof?", "k2")
    frames = await frames_until_end(comm, wait_s=60)
    await comm.disconnect()
    done = frames[-1]
    assert done["type"] == "done" and done["tier"] == "L2", frames
    shown = "".join(f["text"] for f in frames if f["type"] == "chunk")
    # The entailed sentence streams; the invented one is held, checked and dropped.
    assert shown == (
        "The Hiking Boots come in a waterproof version and a version that is not waterproof."
    ), frames
    assert not [f for f in frames if f["type"] == "replace"]
    assert done["guard"] == "trimmed"
    reply = await database_sync_to_async(Message.objects.get)(pk=done["message_id"])
    assert reply.text == shown
    dropped = reply.metadata["unsupported_claims"]
    assert [d["text"] for d in dropped] == [
        "Soak them overnight in warm water to soften new leather."
    ]
    assert dropped[0]["label"] == "neutral"
