"""Issue #33 item 7: where the large role is the local fallback and it can't answer in
time, a question one help-article section is clearly about gets that section quoted
with the offer of a person, not "Sorry, I can't answer that one myself right now".

Real parts: the real priority gates (held as concurrent turns would hold them), the
router, retrieval and embedders on a made-up bicycle shop's article."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from channels.db import database_sync_to_async

from chatbot.models import Message
from inference.admission import admission_reset
from inference.queue import gate_for, queue_reset
from tests.chatbot.test_admission import _ask, _hold
from tests.knowledge.test_pointing import BIKES_EN, _ingest
from tests.shopper import shown

pytestmark = [pytest.mark.django_db(transaction=True)]

# An open question (the router's large tier) about what one section covers.
QUESTION = (
    "Compare the frame warranty with the paint: what exactly is covered for cracks and "
    "scratches, and what would you recommend?"
)


@pytest.fixture(autouse=True)
def _fresh_admission(settings: Any) -> Iterator[None]:
    settings.TIERDESK_ADMISSION = True
    admission_reset()
    queue_reset()
    yield
    admission_reset()
    queue_reset()


async def test_l3_busy_quotes_the_section_and_offers_a_person(seeded_shop: None) -> None:
    doc = await database_sync_to_async(_ingest)("Bicycle delivery", BIKES_EN, "en")
    # The large role is the fallback model (the default install): every slot busy.
    await _hold(gate_for("fallback"), hold_s=60.0)
    frames, done = await _ask(QUESTION)
    assert done["type"] == "done" and done["tier"] == "L3", done
    assert done["degraded"]["reason"] == "predicted"
    text = shown(frames)
    assert text.startswith('Our "Bicycle delivery" article says: "Every frame has')
    assert "can't answer that one myself" not in text and "a person" in text
    assert done["pointed"]["why"] == "l3_degraded" and done["guard"] == "pointed"
    assert "offer:human" in done["actions"]
    assert done["citations"][0]["document_id"] == doc
    assert done["citations"][0]["heading"] == "Frame warranty"
    reply = await Message.objects.select_related("conversation").aget(pk=done["message_id"])
    assert reply.metadata["pointed"] == done["pointed"]
    assert "pending_handoff" in reply.conversation.state


async def test_l3_busy_without_a_section_says_it_cannot_answer_now(seeded_shop: None) -> None:
    await database_sync_to_async(_ingest)("Bicycle delivery", BIKES_EN, "en")
    await _hold(gate_for("fallback"), hold_s=60.0)
    frames, done = await _ask("Which is better for hiking, boots or trail shoes?")
    assert done["type"] == "done" and done["tier"] == "L3", done
    assert done["pointed"] is None and "offer:human" in done["actions"]
    assert "can't answer that one myself" in shown(frames)
