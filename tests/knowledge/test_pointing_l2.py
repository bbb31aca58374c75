"""Pointing on L2's answer path (knowledge.answer, the entailment guard) and over the
WebSocket: a made-up bicycle shop's articles, real retrieval, spaCy and embedders."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from chatbot.models import Message
from knowledge.answer import DONT_KNOW, answer_plan
from tests.knowledge.test_pointing import BIKES_EN, _ingest
from tests.shopper import connect, frames_until_end, send

RETURNS_EN = """# Returning a bicycle

## Return postage

Return postage is free from Spain and Portugal; from every other country you pay the
return postage yourself.
"""


@pytest.mark.django_db
def test_a_question_the_section_is_about_but_does_not_confirm_gets_its_quote() -> None:
    doc = _ingest("Bicycle delivery", BIKES_EN, "en")
    answer = answer_plan(question="does the frame warranty cover rust on the chain?", language="en")
    assert not answer.answered
    assert answer.pointed is not None and answer.pointed["why"] == "not_confirmed"
    assert answer.text.startswith('Our "Bicycle delivery" article says: "Every frame has')
    assert "a person" in answer.text and answer.actions == ["offer:human"]
    assert answer.citations[0]["document_id"] == doc
    assert answer.citations[0]["heading"] == "Frame warranty"
    assert answer.retrieval["pointed"] == answer.pointed


@pytest.mark.django_db
def test_an_unrelated_question_still_gets_dont_know() -> None:
    _ingest("Bicycle delivery", BIKES_EN, "en")
    answer = answer_plan(question="what is the best pizza topping in Naples?", language="en")
    assert answer.pointed is None and answer.text == DONT_KNOW["en"]


def _pointed() -> dict[str, object]:
    return {"text": "QUOTE", "marker": {"why": "other_case", "document_id": 7}}


async def _through(guard: object, text: str) -> str | None:
    """What the guard lets the shopper see of ``text`` (None: replaced)."""
    guard.feed(text, {})  # type: ignore[attr-defined]
    shown: str = await guard.drain()  # type: ignore[attr-defined]
    tail = await guard.finish(shown)  # type: ignore[attr-defined]
    return None if tail is None else shown + tail


async def test_a_sentence_for_another_place_becomes_the_quote() -> None:
    from chatbot.answerers.reply_guards import EntailmentGuard

    passage = "Delivery to Lisbon costs €19. Delivery to Madrid costs €15."
    guard = EntailmentGuard(
        question="how much is delivery to Valencia?",
        passages=[passage],
        extract=passage,
        dont_know="DONT_KNOW",
        pointed=_pointed(),
    )
    assert await _through(guard, "Delivery to Lisbon costs €19. ") is None
    assert guard.verdict.label == "pointed" and guard.verdict.replacement == "QUOTE"
    assert guard.verdict.meta["pointed"]["why"] == "other_case"


async def test_a_sentence_for_the_named_place_stands() -> None:
    from chatbot.answerers.reply_guards import EntailmentGuard

    passage = "Delivery to Lisbon costs €19. Delivery to Madrid costs €15."
    guard = EntailmentGuard(
        question="how much is delivery to Madrid?",
        passages=[passage],
        extract=passage,
        dont_know="DONT_KNOW",
        pointed=_pointed(),
    )
    sentence = "Delivery to Madrid costs €15."
    assert await _through(guard, sentence + " ") == sentence
    assert guard.verdict.label == "passed" and "pointed" not in guard.verdict.meta


@pytest.mark.django_db
def test_a_card_stating_other_places_is_quoted_for_a_place_it_does_not_name() -> None:
    from knowledge.answer import card_or_pointed
    from knowledge.cards import CardMatch, CardRow

    doc = _ingest("Returning a bicycle", RETURNS_EN, "en")
    answer_text = (
        "Return postage is free from Spain and Portugal; from every other country you pay."
    )
    row = CardRow(
        card_id=1,
        document_id=doc,
        title="Returning a bicycle",
        anchor="return-postage",
        heading="Returning a bicycle > Return postage",
        language="en",
        answer=answer_text,
        question="Who pays return postage?",
        kind="answer",
        tokens=frozenset(),
        bigrams=frozenset(),
        snippet=answer_text,
    )
    match = CardMatch(row=row, score=0.9, how="dense-question")
    pointed = card_or_pointed(match, "I'm sending my bike back from Ghent, who pays?", "en")
    assert pointed.pointed is not None and pointed.pointed["why"] == "other_case"
    assert pointed.text.startswith('Our "Returning a bicycle" article says: "Return postage')
    assert pointed.citations[0]["heading"] == "Return postage"
    # The card's own place: the card's answer.
    served = card_or_pointed(match, "I'm sending my bike back from Portugal, who pays?", "en")
    assert served.pointed is None and served.text == answer_text and served.card_id == 1


@pytest.mark.django_db(transaction=True)
async def test_the_pointed_marker_reaches_the_shopper(seeded_shop: None) -> None:
    doc = await database_sync_to_async(_ingest)("Bicycle delivery", BIKES_EN, "en")
    comm, _ = await connect()
    await send(comm, "does the frame warranty cover rust on the chain?", "p1")
    frames = await frames_until_end(comm, wait_s=120)
    await comm.disconnect()
    done = frames[-1]
    assert done["type"] == "done", frames
    shown = "".join(f["text"] for f in frames if f["type"] == "chunk")
    assert shown.startswith('Our "Bicycle delivery" article says:')
    assert done["tier"] == "L2" and "offer:human" in done["actions"]
    assert done["pointed"]["why"] == "not_confirmed" and done["pointed"]["document_id"] == doc
    assert done["citations"][0]["heading"] == "Frame warranty"
    reply = await database_sync_to_async(Message.objects.get)(pk=done["message_id"])
    assert reply.metadata["pointed"] == done["pointed"]


async def test_nothing_backed_and_an_extract_for_another_case_becomes_the_quote() -> None:
    from chatbot.answerers.reply_guards import EntailmentGuard

    passage = "Delivery to Lisbon costs €19. Delivery to Madrid costs €15."
    pointed = _pointed() | {"extract_other_case": True}
    guard = EntailmentGuard(
        question="how much is delivery to Valencia?",
        passages=[passage],
        extract="Delivery to Lisbon costs €19.",
        dont_know="DONT_KNOW",
        pointed=pointed,
    )
    assert await _through(guard, "Delivery is free for everyone. ") is None
    assert guard.verdict.label == "pointed" and guard.verdict.replacement == "QUOTE"


@pytest.mark.django_db
def test_the_plan_knows_when_its_extract_states_another_places_branch() -> None:
    from chatbot.answerers.l2 import L2Plan
    from chatbot.turn import degraded_text

    _ingest("Returning a bicycle", RETURNS_EN, "en")
    answer = answer_plan(
        question="I'm sending my bike back from Ghent. Who pays the return postage?", language="en"
    )
    assert answer.answered and answer.grounding is not None
    pointed = answer.grounding["pointed"]
    assert pointed["extract_other_case"] is True
    # What goes out if the model fails is the quote too, marked only when it goes out.
    assert answer.text == pointed["text"] and answer.pointed == pointed["marker"]
    assert pointed["text"].startswith('Our "Returning a bicycle" article says: "Return postage')
    # A degraded turn (no model in time) sends the quote, not the extract.
    plan = L2Plan(tier="L2", intent="faq", text=answer.text, language="en")
    plan.grounding = answer.grounding
    assert degraded_text(plan) == (pointed["text"], "pointed")
    same = answer_plan(question="who pays the return postage from Portugal?", language="en")
    assert same.grounding is not None and not same.grounding["pointed"]["extract_other_case"]
