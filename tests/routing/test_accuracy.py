"""Measured router quality: tier accuracy on held-out seed utterances, and decision time."""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import replace

import pytest

from routing.classifier import classifier_train
from routing.router import route_decide, router_snapshot_get
from routing.seed import seed_utterances

pytestmark = pytest.mark.usefixtures("seeded")


def _folds(k: int, *, seed: int) -> list[list[tuple[str, str, str]]]:
    """Stratified by (intent, language), so every intent is tested in both languages."""
    groups: dict[tuple[str, str], list[tuple[str, str, str]]] = defaultdict(list)
    for text, language, intent in seed_utterances():
        groups[(intent, language)].append((text, language, intent))
    rng = random.Random(seed)
    folds: list[list[tuple[str, str, str]]] = [[] for _ in range(k)]
    for group in groups.values():
        rng.shuffle(group)
        for i, utterance in enumerate(group):
            folds[i % k].append(utterance)
    return folds


def test_tier_accuracy_on_held_out_utterances() -> None:
    """4-fold cross-validation: every seed utterance is routed once by a classifier
    that never saw it (with the seeded rules in front, as in production)."""
    folds = _folds(4, seed=2026)
    live = router_snapshot_get()
    tiers = live.intent_tiers
    correct: dict[str, int] = defaultdict(int)
    total: dict[str, int] = defaultdict(int)
    for held_out in folds:
        train = [(t, intent) for fold in folds if fold is not held_out for t, _, intent in fold]
        classifier = classifier_train(samples=train)
        assert classifier.sample_count == len(train)
        snapshot = replace(live, classifier=classifier)
        for text, language, intent in held_out:
            decision = route_decide(text=text, language=language, snapshot=snapshot)
            total[language] += 1
            correct[language] += decision.tier == tiers[intent]

    accuracy = sum(correct.values()) / sum(total.values())
    assert sum(total.values()) == len(seed_utterances())
    assert accuracy >= 0.85, (accuracy, dict(correct), dict(total))
    # Neither language may hide behind the other's score.
    for language in total:
        assert correct[language] / total[language] >= 0.8, (language, dict(correct), dict(total))
