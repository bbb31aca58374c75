from __future__ import annotations

import pytest

from routing.models import Intent, Rule, SlotPattern, Utterance
from routing.seed import intents_seed, seed_intents_data, seed_utterances, seed_utterances_by_intent
from routing.types import (
    CLARIFY,
    COMPLEX_QUESTION,
    HANDOFF,
    KNOWLEDGE_QUESTION,
    L1,
    L1_INTENTS,
    L2,
    L3,
    OUT_OF_SCOPE,
)

pytestmark = pytest.mark.django_db


def test_seed_creates_every_intent_with_its_tier() -> None:
    created = intents_seed()

    tiers = dict(Intent.objects.values_list("name", "tier"))
    assert tiers == {
        **dict.fromkeys(L1_INTENTS, L1),
        KNOWLEDGE_QUESTION: L2,
        COMPLEX_QUESTION: L3,
        OUT_OF_SCOPE: CLARIFY,
        HANDOFF: L1,
    }
    assert created == {
        "intents": len(tiers),
        "utterances": len(seed_utterances()),
        "slot_patterns": 3,
        "rules": 6,
    }
    assert Utterance.objects.count() == len(seed_utterances())


def test_seed_has_plenty_of_examples_per_intent_and_language() -> None:
    for item in seed_intents_data():
        if item["name"] == HANDOFF:
            continue  # routed by its rule only: no classifier examples on purpose
        en, zh = item["utterances"]["en"], item["utterances"]["zh"]
        assert len(set(en)) >= 25, item["name"]
        assert len(set(zh)) >= 15, item["name"]


def test_seed_is_idempotent() -> None:
    intents_seed()
    counts = (
        Intent.objects.count(),
        Utterance.objects.count(),
        SlotPattern.objects.count(),
        Rule.objects.count(),
    )

    again = intents_seed()

    assert again == {"intents": 0, "utterances": 0, "slot_patterns": 0, "rules": 0}
    assert (
        Intent.objects.count(),
        Utterance.objects.count(),
        SlotPattern.objects.count(),
        Rule.objects.count(),
    ) == counts


def test_seed_keeps_admin_edits() -> None:
    intents_seed()
    greeting = Intent.objects.get(name="greeting")
    greeting.tier = L3
    greeting.save()
    edited = Utterance.objects.get(intent=greeting, language="en", text="hello")
    edited.text = "hellooo there"
    edited.save()
    Utterance.objects.get(intent=greeting, language="en", text="bye").delete()
    Rule.objects.filter(name="comparison").update(enabled=False, priority=5)
    before = Utterance.objects.count()

    intents_seed()

    greeting.refresh_from_db()
    assert greeting.tier == L3
    texts = set(Utterance.objects.filter(intent=greeting).values_list("text", flat=True))
    assert "hellooo there" in texts
    assert "hello" not in texts  # the edit is not undone by re-adding the original
    assert "bye" not in texts  # nor is the deleted example resurrected
    assert Utterance.objects.count() == before
    assert Rule.objects.filter(name="comparison", enabled=False, priority=5).exists()


def test_seed_fills_a_language_an_intent_lacks() -> None:
    intents_seed()
    Utterance.objects.filter(intent__name="greeting", language="zh").delete()

    created = intents_seed()

    zh = len(seed_utterances_by_intent()[("greeting", "zh")])
    assert created["utterances"] == zh
