"""Router evaluation on the labelled sets (``make eval-router``).

``routing/seed_data/train.tsv`` is part of the classifier's training data (the seed
loads it); ``bench/sets/router/demo/heldout.tsv`` never is: ``evaluate`` refuses to
run when a held-out text is among the training utterances. The report has accuracy,
per-class precision and recall, the confusion matrix, tier accuracy (the
cost-relevant figure) per language, and the targets with a verdict each.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from typing import Any

import numpy as np

from routing.classifier import message_embedding
from routing.handoff_detect import handoff_decide
from routing.handoff_scorer import HandoffScorer
from routing.normalise import text_normalise, text_tokens
from routing.router import CompiledRule, RouterSnapshot, route_decide
from routing.training_data import HANDOFF, Labelled
from routing.types import CLARIFY, COMPLEX_QUESTION, L1, L2, L3, OUT_OF_SCOPE

# The targets on the held-out part.
TARGETS = {
    "tier_accuracy_en_min": 0.95,
    "tier_accuracy_zh_min": 0.93,
    "out_of_scope_recall_min": 0.90,
    "l1_l2_sent_to_l3_max": 0.03,
    "complex_sent_to_l1_max": 0.03,
    "handoff_accuracy_min": 0.95,
    "false_handoff_max": 0.02,
}


def handoff_evaluate(*, items: list[Labelled], snapshot: RouterSnapshot) -> dict[str, Any]:
    """Requests for a person routed to ``handoff`` (recall, per language) and near-misses
    routed there by mistake (false handoffs)."""
    stats: Counter[str] = Counter()
    errors = []
    timings: list[float] = []
    step_timings: list[float] = []
    rules = [rule for rule in snapshot.rules if rule.intent == HANDOFF]
    for item in items:
        started = time.perf_counter()
        decision = route_decide(text=item.text, language=item.language, snapshot=snapshot)
        timings.append((time.perf_counter() - started) * 1000)
        if snapshot.handoff is not None:
            step_timings.append(_handoff_step_ms(item, snapshot.handoff, rules))
        # Each part on its own, on the whole message (no vetoes): what the scorer
        # (the model) and the rule do themselves, beside what the recogniser delivers.
        alone = _parts_alone(item, rules=rules, scorer=snapshot.handoff)
        got = decision.intent == HANDOFF and decision.tier != CLARIFY
        want = item.intent == HANDOFF
        key = f"{item.language}_{'requests' if want else 'near_misses'}"
        stats[key] += 1
        stats[f"{key}_handoff"] += got
        for part, says in alone.items():
            stats[f"{part}_{'requests' if want else 'near_misses'}_handoff"] += says
        stats["correct"] += got == want
        stats["total"] += 1
        if got != want:
            errors.append(
                {
                    "text": item.text,
                    "language": item.language,
                    "expected": item.intent,
                    "got": decision.intent,
                    "reason": decision.reason.get("rule") or decision.reason.get("kind"),
                }
            )
    requests = stats["en_requests"] + stats["zh_requests"]
    misses = stats["en_near_misses"] + stats["zh_near_misses"]
    result: dict[str, Any] = {
        "requests_en": stats["en_requests"],
        "requests_zh": stats["zh_requests"],
        "near_misses": misses,
        "accuracy": _ratio(stats["correct"], stats["total"]),
        "recall": _ratio(stats["en_requests_handoff"] + stats["zh_requests_handoff"], requests),
        "recall_en": _ratio(stats["en_requests_handoff"], stats["en_requests"]),
        "recall_zh": _ratio(stats["zh_requests_handoff"], stats["zh_requests"]),
        "false_handoff_rate": _ratio(
            stats["en_near_misses_handoff"] + stats["zh_near_misses_handoff"], misses
        ),
        **{
            f"{part}_{name}": _ratio(stats[f"{part}_{kind}_handoff"], total)
            for part in ("scorer_alone", "rule_alone")
            for name, kind, total in (
                ("recall", "requests", requests),
                ("false_handoff_rate", "near_misses", misses),
            )
        },
        # Every message here names a person, so each one runs the handoff scorer (and,
        # in English, the sentence embedding the classifier would need anyway).
        "decision_ms_p50": _percentile(timings, 50),
        "decision_ms_p95": _percentile(timings, 95),
        # What the handoff scorer step adds to a decision: the vetoes, the cue and the
        # scorer, the message's embedding already computed (the classifier's).
        "handoff_step_ms_p50": _percentile(step_timings, 50),
        "handoff_step_ms_p95": _percentile(step_timings, 95),
        "errors": errors,
    }
    result["verdicts"] = {
        "handoff_accuracy": _at_least(result["accuracy"], TARGETS["handoff_accuracy_min"]),
        "handoff_recall_en": _at_least(result["recall_en"], TARGETS["handoff_accuracy_min"]),
        "handoff_recall_zh": _at_least(result["recall_zh"], TARGETS["handoff_accuracy_min"]),
        "false_handoffs": _at_most(result["false_handoff_rate"], TARGETS["false_handoff_max"]),
    }
    return result


def leaks(*, heldout: list[Labelled], training_texts: list[str]) -> list[str]:
    """Held-out texts that are also training texts (after normalisation)."""
    seen = {text_normalise(t) for t in training_texts}
    return [item.text for item in heldout if text_normalise(item.text) in seen]


def _parts_alone(
    item: Labelled, *, rules: list[CompiledRule], scorer: HandoffScorer | None
) -> dict[str, bool]:
    """Whether the handoff rules alone, and the scorer alone (at its threshold), call the
    whole message a request, without the vetoes or the cue."""
    normalised = text_normalise(item.text)
    tokens = len(text_tokens(normalised))
    said = {
        "rule_alone": any(
            rule.evaluate(text=normalised, tokens=tokens, language=item.language) is not None
            for rule in rules
        )
    }
    if scorer is not None:
        embedding = message_embedding(item.text) if scorer.embedding_dim else None
        score = scorer.score(normalised=normalised, embedding=embedding)
        said["scorer_alone"] = score >= scorer.threshold
    return said


def _handoff_step_ms(item: Labelled, scorer: HandoffScorer, rules: list[CompiledRule]) -> float:
    normalised = text_normalise(item.text)
    whole = message_embedding(item.text) if scorer.embedding_dim else None  # cached by now

    def embedding_of(part: str) -> np.ndarray | None:
        return whole if part == normalised else message_embedding(part)

    started = time.perf_counter()
    handoff_decide(
        normalised=normalised,
        language=item.language,
        rules=rules,
        scorer=scorer,
        embedding_of=embedding_of,
    )
    return (time.perf_counter() - started) * 1000


def _percentile(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 3) if values else None


def _ratio(numerator: int, denominator: int) -> float | None:
    return round(numerator / denominator, 4) if denominator else None


def evaluate(
    *, items: list[Labelled], snapshot: RouterSnapshot, intent_tiers: dict[str, str]
) -> dict[str, Any]:
    """Route every item with ``snapshot`` and score the decisions."""
    labels = sorted(intent_tiers)
    confusion: dict[str, Counter[str]] = defaultdict(Counter)
    by_language: dict[str, Counter[str]] = defaultdict(Counter)
    tier_confusion: dict[str, Counter[str]] = defaultdict(Counter)
    errors: list[dict[str, Any]] = []
    timings: list[float] = []
    for item in items:
        started = time.perf_counter()
        decision = route_decide(text=item.text, language=item.language, snapshot=snapshot)
        timings.append((time.perf_counter() - started) * 1000)
        # A clarifying question is the out-of-scope answer, whatever the candidate was.
        predicted = OUT_OF_SCOPE if decision.tier == CLARIFY else decision.intent
        expected_tier = intent_tiers[item.intent]
        confusion[item.intent][predicted] += 1
        tier_confusion[expected_tier][decision.tier] += 1
        stats = by_language[item.language]
        stats["total"] += 1
        stats["intent_ok"] += predicted == item.intent
        stats["tier_ok"] += decision.tier == expected_tier
        if expected_tier in (L1, L2):
            stats["l1_l2"] += 1
            stats["l1_l2_to_l3"] += decision.tier == L3
        if item.intent == COMPLEX_QUESTION:
            stats["complex"] += 1
            stats["complex_to_l1"] += decision.tier == L1
        if item.intent == OUT_OF_SCOPE:
            stats["oos"] += 1
            stats["oos_ok"] += decision.tier == CLARIFY
        if decision.tier != expected_tier or predicted != item.intent:
            errors.append(
                {
                    "text": item.text,
                    "language": item.language,
                    "expected": f"{item.intent} ({expected_tier})",
                    "got": f"{predicted} ({decision.tier})",
                    "confidence": round(decision.confidence, 3),
                    "reason": decision.reason.get("rule")
                    or decision.reason.get("why")
                    or decision.reason.get("kind"),
                }
            )

    per_class = {}
    for label in labels:
        tp = confusion[label][label]
        predicted_n = sum(row[label] for row in confusion.values())
        actual_n = sum(confusion[label].values())
        per_class[label] = {
            "precision": _ratio(tp, predicted_n),
            "recall": _ratio(tp, actual_n),
            "support": actual_n,
        }

    def figures(stats: Counter[str]) -> dict[str, Any]:
        return {
            "messages": stats["total"],
            "accuracy": _ratio(stats["intent_ok"], stats["total"]),
            "tier_accuracy": _ratio(stats["tier_ok"], stats["total"]),
            "out_of_scope_recall": _ratio(stats["oos_ok"], stats["oos"]),
            "l1_l2_sent_to_l3": _ratio(stats["l1_l2_to_l3"], stats["l1_l2"]),
            "complex_sent_to_l1": _ratio(stats["complex_to_l1"], stats["complex"]),
        }

    overall: Counter[str] = Counter()
    for stats in by_language.values():
        overall.update(stats)
    result: dict[str, Any] = {
        "overall": figures(overall),
        "by_language": {lang: figures(stats) for lang, stats in sorted(by_language.items())},
        "per_class": per_class,
        "confusion_matrix": {
            "labels": labels,
            "rows_are_expected": {label: [confusion[label][p] for p in labels] for label in labels},
        },
        "tier_confusion": {
            tier: dict(sorted(row.items())) for tier, row in sorted(tier_confusion.items())
        },
        "decision_ms_mean": round(sum(timings) / len(timings), 3) if timings else None,
        "errors": errors,
    }
    en = result["by_language"].get("en", {})
    zh = result["by_language"].get("zh", {})
    o = result["overall"]
    result["verdicts"] = {
        "tier_accuracy_en": _at_least(en.get("tier_accuracy"), TARGETS["tier_accuracy_en_min"]),
        "tier_accuracy_zh": _at_least(zh.get("tier_accuracy"), TARGETS["tier_accuracy_zh_min"]),
        "out_of_scope_recall": _at_least(
            o["out_of_scope_recall"], TARGETS["out_of_scope_recall_min"]
        ),
        "l1_l2_sent_to_l3": _at_most(o["l1_l2_sent_to_l3"], TARGETS["l1_l2_sent_to_l3_max"]),
        "complex_sent_to_l1": _at_most(o["complex_sent_to_l1"], TARGETS["complex_sent_to_l1_max"]),
    }
    return result


def _at_least(value: float | None, limit: float) -> bool:
    return value is not None and value >= limit


def _at_most(value: float | None, limit: float) -> bool:
    return value is not None and value <= limit


def report_format(result: dict[str, Any]) -> str:
    lines = []
    for scope, figs in [("overall", result["overall"]), *result["by_language"].items()]:
        lines.append(
            f"{scope:>8}: n={figs['messages']} accuracy={figs['accuracy']} "
            f"tier_accuracy={figs['tier_accuracy']} oos_recall={figs['out_of_scope_recall']} "
            f"L1/L2->L3={figs['l1_l2_sent_to_l3']} complex->L1={figs['complex_sent_to_l1']}"
        )
    lines.append("")
    lines.append(f"{'class':<20} {'prec':>6} {'recall':>6} {'n':>4}")
    for label, figs in result["per_class"].items():
        lines.append(
            f"{label:<20} {figs['precision']!s:>6} {figs['recall']!s:>6} {figs['support']:>4}"
        )
    labels = result["confusion_matrix"]["labels"]
    short = [label[:6] for label in labels]
    lines.append("")
    lines.append("confusion (rows expected, columns predicted):")
    lines.append(" " * 20 + " ".join(f"{s:>6}" for s in short))
    for label in labels:
        row = result["confusion_matrix"]["rows_are_expected"][label]
        lines.append(f"{label:<20}" + " ".join(f"{n:>6}" for n in row))
    lines.append("")
    lines.append(f"tier confusion (expected -> predicted): {result['tier_confusion']}")
    lines.append(
        "targets: "
        + ", ".join(f"{k}={'PASS' if v else 'MISS'}" for k, v in result["verdicts"].items())
    )
    return "\n".join(lines)
