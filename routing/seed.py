"""Default intents, example utterances, slot patterns and rules.

Safe to run on every deploy: it only creates what is missing and never edits or
re-adds what an admin changed. Utterances are seeded per (intent, language) only
when that intent has none in that language yet, so an example an admin deleted
(because it misrouted) does not come back on the next deploy.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from django.db import transaction

from routing.models import Intent, Rule, SlotPattern, Utterance
from routing.versioning import router_version_bump

SEED_DIR = Path(__file__).resolve().parent / "seed_data"


@cache
def seed_intents_data() -> list[dict[str, Any]]:
    """The seed intents as stored in seed_data/intents.json (read once per process)."""
    data = json.loads((SEED_DIR / "intents.json").read_text(encoding="utf-8"))
    intents: list[dict[str, Any]] = data["intents"]
    return intents


@cache
def seed_rules_data() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SEED_DIR / "rules.json").read_text(encoding="utf-8"))
    return data


@cache
def seed_utterances_by_intent() -> dict[tuple[str, str], list[str]]:
    """(intent, language) -> example texts: intents.json plus the training part of the
    labelled evaluation set (routing/eval/train.tsv). The held-out part
    (routing/eval/heldout.tsv) is never seeded."""
    from routing.eval.data import TRAIN_FILE, labelled_load

    grouped: dict[tuple[str, str], list[str]] = {}
    for item in seed_intents_data():
        for language, texts in item["utterances"].items():
            grouped.setdefault((item["name"], language), []).extend(texts)
    for labelled in labelled_load(TRAIN_FILE):
        grouped.setdefault((labelled.intent, labelled.language), []).append(labelled.text)
    return {key: list(dict.fromkeys(texts)) for key, texts in grouped.items()}


def seed_utterances() -> list[tuple[str, str, str]]:
    """Every seed utterance as (text, language, intent)."""
    return [
        (text, language, intent)
        for (intent, language), texts in seed_utterances_by_intent().items()
        for text in texts
    ]


@transaction.atomic
def intents_seed() -> dict[str, int]:
    """Create the missing default router data; returns how many rows of each were created."""
    created = {"intents": 0, "utterances": 0, "slot_patterns": 0, "rules": 0}

    intents: dict[str, Intent] = {}
    for item in seed_intents_data():
        intent, was_created = Intent.objects.get_or_create(
            name=item["name"],
            defaults={"tier": item["tier"], "description": item["description"]},
        )
        intents[intent.name] = intent
        created["intents"] += was_created

    has_language = set(Utterance.objects.values_list("intent__name", "language").distinct())
    new_utterances = [
        Utterance(intent=intents[intent], language=language, text=text)
        for (intent, language), texts in seed_utterances_by_intent().items()
        if (intent, language) not in has_language
        for text in texts  # de-duplicated, order kept
    ]
    # bulk_create sends no post_save, so the version is bumped once below instead
    # of once per row.
    Utterance.objects.bulk_create(new_utterances)
    created["utterances"] = len(new_utterances)

    rules_data = seed_rules_data()
    existing_slots = set(SlotPattern.objects.values_list("name", flat=True))
    for slot in rules_data["slot_patterns"]:
        if slot["name"] not in existing_slots:
            SlotPattern.objects.create(name=slot["name"], regex=slot["regex"])
            created["slot_patterns"] += 1

    for rule in rules_data["rules"]:
        intent = intents.get(rule["intent"]) or Intent.objects.get(name=rule["intent"])
        _, was_created = Rule.objects.get_or_create(
            name=rule["name"],
            defaults={
                "kind": rule["kind"],
                "pattern": rule.get("pattern", ""),
                "keywords": rule.get("keywords", []),
                "min_density": rule.get("min_density", 0.0),
                "min_matches": rule.get("min_matches", 1),
                "tier": rule.get("tier", ""),
                "intent": intent,
                "priority": rule["priority"],
                "languages": rule.get("languages", []),
            },
        )
        created["rules"] += was_created

    if created["utterances"]:
        router_version_bump()
    return created
