"""Issue #15: recognising a request for a person (routing/handoff.py) through the
router: the handoff rules after the vetoes, then the scorer. The router's test
settings have sentence embeddings off, so the scorer here is its TF-IDF-only form;
``make eval-router`` measures the shipped one (with embeddings) on the dev and
held-out sets."""

from __future__ import annotations

import pytest

from routing import handoff
from routing.eval.evaluate import HANDOFF_DEV_FILE, handoff_evaluate, handoff_load
from routing.handoff import (
    handoff_cue,
    handoff_examples_load,
    handoff_remainder,
    handoff_scorer_get,
)
from routing.router import route_message, router_snapshot_get
from routing.text import text_normalise
from routing.types import HANDOFF

pytestmark = pytest.mark.usefixtures("seeded")


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("talk to a human", "en"),
        ("agent please", "en"),
        # No pattern of the rule has these; the scorer recognises them.
        ("i'd rather deal with a person than a bot", "en"),
        ("can i be connected to a representative", "en"),
        ("转人工", "zh"),
        ("人工客服", "zh"),
        ("找个真人", "zh"),
    ],
)
def test_requests_for_a_person_are_handoffs(text: str, language: str) -> None:
    decision = route_message(text=text, language=language)
    assert decision.intent == HANDOFF, decision.reason


@pytest.mark.parametrize(
    ("text", "language"),
    [
        # Declining a person: the rule fired on each of these before the vetoes.
        ("I don't need a human, just tell me the return window", "en"),
        ("thanks, no need for an agent", "en"),
        ("不需要转人工了", "zh"),
        # What the bot is, and opening hours: questions, not requests.
        ("is a human reading this?", "en"),
        ("are you a bot or a real agent", "en"),
        ("你是人工客服吗", "zh"),
        ("what hours is your support team online", "en"),
        ("客服人员什么时候上班", "zh"),
        # Words with 人工 that name no person.
        ("人工智能翻译机有吗", "zh"),
    ],
)
def test_mentions_that_ask_for_no_one_are_not(text: str, language: str) -> None:
    decision = route_message(text=text, language=language)
    assert decision.intent != HANDOFF, decision.reason


def test_a_vetoed_clause_leaves_the_rest_of_the_message() -> None:
    remainder, vetoes = handoff_remainder(text_normalise("Are you a bot? I want a person."))
    assert vetoes == ["asks_what_the_bot_is"] and remainder == "i want a person."
    decision = route_message(text="Are you a bot? I want a person.", language="en")
    assert decision.intent == HANDOFF
    assert decision.reason["vetoed"] == ["asks_what_the_bot_is"]
    # "not a bot" asks for a person; the negation governs the bot, not the person.
    assert route_message(text="i don't want a robot i want a human", language="en").intent == (
        HANDOFF
    )
    assert route_message(text="不要机器人，要人工", language="zh").intent == HANDOFF


def test_an_angry_complaint_stays_with_its_rule() -> None:
    # The seed data labels "I want a manager now, this is a scam" complaint, L3 (which
    # offers a person itself); the scorer only decides what no rule did.
    decision = route_message(text="this is a scam, i want a manager now", language="en")
    assert decision.reason.get("rule") == "angry-complaint"


def test_every_request_in_the_examples_and_the_dev_set_reaches_the_recogniser() -> None:
    # The cue regex keeps messages that name no person off the scorer; it must not
    # keep a request off.
    requests = [t for t, is_request in handoff_examples_load() if is_request]
    requests += [item.text for item in handoff_load(HANDOFF_DEV_FILE) if item.intent == HANDOFF]
    assert len(requests) > 400
    assert [t for t in requests if not handoff_cue(text_normalise(t))] == []


@pytest.mark.parametrize(
    "text", ["where is my order #W2611340?", "do gift cards expire?", "我的订单什么时候到？"]
)
def test_a_message_that_names_no_person_has_no_cue(text: str) -> None:
    # An empty alternative in the cue regex once matched every word boundary, so every
    # English message paid for the scorer's embedding (found by the router benchmark).
    assert not handoff_cue(text_normalise(text))


def test_the_dev_set_figures_of_the_tfidf_only_form() -> None:
    # The dev set is what the threshold was chosen on (not a held-out figure): this
    # guards the recogniser against a change that breaks it, at the figures measured
    # when it was built (accuracy 0.991, 2 false handoffs of 182; docs/routing.md).
    snapshot = router_snapshot_get()
    assert snapshot.handoff is not None and snapshot.handoff.embedding_dim == 0
    result = handoff_evaluate(items=handoff_load(HANDOFF_DEV_FILE), snapshot=snapshot)
    assert result["accuracy"] >= 0.98, result["errors"]
    assert result["false_handoff_rate"] <= 0.02, result["errors"]


def test_the_scorer_is_stored_and_the_next_process_loads_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = handoff_scorer_get()
    assert handoff_scorer_get() is first  # once per process
    # A new process (nothing in memory) loads what the first stored, training nothing.
    monkeypatch.setattr(handoff, "_scorer", None)

    def train_again(*args: object, **kwargs: object) -> None:
        raise AssertionError("trained again instead of loading the stored scorer")

    monkeypatch.setattr(handoff, "handoff_scorer_train", train_again)
    loaded = handoff_scorer_get()
    assert loaded is not first
    text = text_normalise("can i be connected to a representative")
    assert loaded.score(normalised=text, embedding=None) == first.score(
        normalised=text, embedding=None
    )
