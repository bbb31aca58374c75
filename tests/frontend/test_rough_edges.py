"""Issue #18 items 9-14: the rough edges a shopper, a support admin and an operator hit
in the first week. Real PostgreSQL/Redis through the real ASGI app; the browser side of
items 9 and 10 is in tests/browser/test_rough_edges_browser.py."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async

from chatbot.models import Conversation, Message
from chatbot.orders.identity import shopper_token_issue
from tests.shopper import connect, frames_until_end, send

pytestmark = pytest.mark.django_db(transaction=True)

MEI = "mei_patel_7272"  # owns #W9583042 (pending)


# -- item 9: a reload keeps Sources and a pending confirmation's Yes/No ------------------


@pytest.mark.usefixtures("isolated_state")
async def test_history_after_reconnect_carries_the_confirmation_the_reply_asks_for(
    seeded_shop: None, fake_models: Any
) -> None:
    comm, hello = await connect()
    await comm.send_json_to({"type": "identify", "token": shopper_token_issue(customer_id=MEI)})
    assert (await comm.receive_json_from())["type"] == "identified"
    await send(comm, "cancel #W9583042, ordered by mistake", "c1")
    assert (await comm.receive_json_from())["type"] == "ack"
    done = (await frames_until_end(comm))[-1]
    assert done["type"] == "done" and done["actions"] == ["confirm"], done
    await comm.disconnect()

    comm, again = await connect(hello["session"])
    last = again["history"][-1]
    assert last["message_id"] == done["message_id"]
    assert last["actions"] == ["confirm"] and last["citations"] == []
    # The shopper's own message carries neither.
    assert again["history"][-2]["role"] == "user" and again["history"][-2]["actions"] == []
    await comm.disconnect()


async def test_history_carries_a_replys_citations_with_their_heading(seeded_shop: None) -> None:
    comm, hello = await connect()
    await comm.disconnect()
    citation = {
        "document_id": 7,
        "chunk_id": 70,
        "title": "Gift cards",
        "anchor": "do-gift-cards-expire",
        "heading": "Do gift cards expire?",
        "snippet": "Gift cards never expire.",
        "score": 0.5,
    }

    def store() -> int:
        conv = Conversation.objects.get(session_key=hello["session"])
        ask = Message.objects.create(
            conversation=conv, role="user", text="do gift cards expire?", status="received"
        )
        reply = Message.objects.create(
            conversation=conv,
            role="bot",
            reply_to=ask,
            text="No, gift cards never expire.",
            status="complete",
            tier="L2",
            metadata={"citations": [citation], "actions": [], "guard": "passed"},
        )
        return reply.pk

    reply_id = await database_sync_to_async(store)()
    comm, again = await connect(hello["session"])
    last = again["history"][-1]
    assert last["message_id"] == reply_id and last["citations"] == [citation]
    await comm.disconnect()


def test_a_passage_citation_names_its_heading_not_only_the_slug() -> None:
    from knowledge.retrieval import Passage

    passage = Passage(
        chunk_id=1,
        document_id=2,
        title="Gift cards",
        anchor="do-gift-cards-expire",
        heading="Gift cards > Do gift cards expire?",
        text="Gift cards never expire.",
        language="en",
        score=0.3,
        similarity=0.8,
        coverage=1.0,
        bm25=None,
        relevant=True,
    )
    cited = passage.citation()
    assert cited["heading"] == "Do gift cards expire?" and cited["anchor"] == "do-gift-cards-expire"
