"""Message -> tier, intent, slots and the reason why.

Order: normalise, extract slots, rules by priority (first match wins), then the
classifier. Unclear or off-topic messages get a clarifying question, not a guess.
Everything the decision needs is compiled into a ``RouterSnapshot`` that is cached
per ``RouterVersion``, so a decision touches no database and costs ~1 ms.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from django.conf import settings

from inference.versioned import VersionedCache
from knowledge.text import language_detect
from routing.classifier import TrainedClassifier, embedding_applies, message_embedding
from routing.classifier_store import classifier_get
from routing.handoff_detect import handoff_decide
from routing.handoff_scorer import HandoffScorer, handoff_scorer_get
from routing.models import Intent, OutOfScopePoint, Rule, SlotPattern
from routing.normalise import text_normalise, text_tokens
from routing.oos_score import E5, MINILM
from routing.order_ids import order_id_find, order_id_normalize, order_ids
from routing.roleplay import roleplay_match
from routing.types import (
    CLARIFY,
    HANDOFF,
    ORDER_INTENTS,
    ORDER_STATUS,
    OUT_OF_SCOPE,
    ROLE_PLAY,
    RouteDecision,
)
from routing.versioning import ROUTER_VERSION
from shop.specs import postcode_canonical

__all__ = [
    "RouterSnapshot",
    "language_detect",
    "route_decide",
    "route_message",
    "router_snapshot_get",
]

logger = logging.getLogger(__name__)

_LATIN_RE = re.compile(r"[a-z0-9]")


# --- compiled data -------------------------------------------------------------------


def _normalise_email(value: str) -> str:
    return value.lower()


def _normalise_zip(value: str) -> str:
    # "sw1a  1aa" -> "SW1A 1AA": the form verification compares (shop.specs).
    return postcode_canonical(value)


def _normalise_order_id(value: str) -> str:
    # The pattern already matched; fall back to the raw text so a shop whose admin
    # widened the regex still gets a value rather than a silently dropped slot.
    return order_id_normalize(value) or value.upper()


# Slot values with one canonical form the rest of the system compares against.
_SLOT_NORMALISERS: dict[str, Callable[[str], str]] = {
    "order_id": _normalise_order_id,
    "email": _normalise_email,
    "zip": _normalise_zip,
}


@dataclass(frozen=True)
class CompiledSlotPattern:
    name: str
    regex: re.Pattern[str]
    intent: str | None  # None: every message

    def extract(self, text: str) -> str | None:
        match = self.regex.search(text)
        if match is None:
            return None
        raw = match.group("value") if "value" in self.regex.groupindex else match.group(0)
        normalise = _SLOT_NORMALISERS.get(self.name)
        return normalise(raw.strip()) if normalise else raw.strip()


@dataclass(frozen=True)
class CompiledRule:
    name: str
    kind: str
    tier: str
    intent: str
    languages: frozenset[str]  # empty: every language
    regex: re.Pattern[str] | None = None
    min_matches: int = 1
    keyword_regex: re.Pattern[str] | None = None
    min_density: float = 0.0

    def evaluate(self, *, text: str, tokens: int, language: str) -> dict[str, Any] | None:
        """The rule's evidence if it fires on the normalised ``text``, else None."""
        if self.languages and language not in self.languages:
            return None
        if self.regex is not None:
            matches = [m.group(0) for m in self.regex.finditer(text)]
            if len(matches) < self.min_matches:
                return None
            return {"match": matches[0].strip()[:80], "matches": len(matches)}
        if self.keyword_regex is not None and tokens:
            found = [m.group(0) for m in self.keyword_regex.finditer(text)]
            covered = sum(len(text_tokens(k)) for k in found)
            density = covered / tokens
            if not found or density < self.min_density:
                return None
            return {"keywords": sorted(set(found)), "density": round(density, 3)}
        return None


def _keyword_regex(keywords: list[str]) -> re.Pattern[str]:
    parts = []
    # Longest first, so "never again" wins over a shorter overlapping keyword.
    for keyword in sorted(
        {text_normalise(k) for k in keywords if k.strip()}, key=len, reverse=True
    ):
        escaped = re.escape(keyword)
        # Latin keywords match whole words only ("sue" is not in "issue"); Chinese
        # has no spaces, so a Chinese keyword matches anywhere.
        if _LATIN_RE.search(keyword):
            escaped = rf"(?<![a-z0-9]){escaped}(?![a-z0-9])"
        parts.append(escaped)
    return re.compile("|".join(parts))


@dataclass(frozen=True)
class RouterSnapshot:
    """Everything a decision needs, compiled from one version of the router's data."""

    rules: tuple[CompiledRule, ...]
    slot_patterns: tuple[CompiledSlotPattern, ...]
    intent_tiers: dict[str, str]  # enabled intents only
    classifier: TrainedClassifier | None
    # The out-of-scope point a support admin chose on the trade-off curve (the latest
    # OutOfScopePoint); None: the TIERDESK_ROUTER_CLARIFY_THRESHOLD setting.
    clarify_threshold: float | None = None
    # Asking for a person (routing/handoff_scorer.py); None: the handoff rules and vetoes only.
    handoff: HandoffScorer | None = None


def _rules_compile(enabled_intents: dict[str, str]) -> tuple[CompiledRule, ...]:
    compiled = []
    for rule in (
        Rule.objects.filter(enabled=True).select_related("intent").order_by("priority", "name")
    ):
        if rule.intent.name not in enabled_intents:
            continue
        languages = frozenset(rule.languages) if isinstance(rule.languages, list) else frozenset()
        tier = rule.tier or rule.intent.tier
        try:
            # What the rule's kind adds to the common fields (nothing: not compilable).
            matcher: dict[str, Any] = {}
            if rule.kind == Rule.KIND_REGEX and rule.pattern:
                matcher = {
                    "regex": re.compile(rule.pattern, re.IGNORECASE),
                    "min_matches": max(1, rule.min_matches),
                }
            elif rule.kind == Rule.KIND_KEYWORDS and isinstance(rule.keywords, list):
                keywords = [k for k in rule.keywords if isinstance(k, str)]
                if keywords:
                    matcher = {
                        "keyword_regex": _keyword_regex(keywords),
                        "min_density": rule.min_density,
                    }
            if matcher:
                compiled.append(
                    CompiledRule(
                        name=rule.name,
                        kind=rule.kind,
                        tier=tier,
                        intent=rule.intent.name,
                        languages=languages,
                        **matcher,
                    )
                )
        except re.error:
            # The admin validates patterns, but a row written around it must not take
            # routing down: skip that rule, keep the rest.
            logger.exception("router rule %s has an invalid pattern; skipped", rule.name)
    return tuple(compiled)


def _slot_patterns_compile(enabled_intents: dict[str, str]) -> tuple[CompiledSlotPattern, ...]:
    compiled = []
    for slot in SlotPattern.objects.filter(enabled=True).select_related("intent"):
        intent = slot.intent.name if slot.intent is not None else None
        if intent is not None and intent not in enabled_intents:
            continue
        try:
            regex = re.compile(slot.regex, re.IGNORECASE)
        except re.error:
            logger.exception("slot pattern %s has an invalid regex; skipped", slot.name)
            continue
        compiled.append(CompiledSlotPattern(name=slot.name, regex=regex, intent=intent))
    return tuple(compiled)


@dataclass(frozen=True)
class _RuleData:
    rules: tuple[CompiledRule, ...]
    slot_patterns: tuple[CompiledSlotPattern, ...]
    intent_tiers: dict[str, str]
    clarify_threshold: float | None = None


def _rule_data_build(previous: _RuleData | None, version: Hashable) -> _RuleData:
    tiers = dict(Intent.objects.filter(enabled=True).values_list("name", "tier"))
    return _RuleData(
        rules=_rules_compile(tiers),
        slot_patterns=_slot_patterns_compile(tiers),
        intent_tiers=tiers,
        clarify_threshold=OutOfScopePoint.objects.values_list("threshold", flat=True).first(),
    )


rule_cache: VersionedCache[_RuleData] = VersionedCache(
    name="router rules", source=ROUTER_VERSION, build=_rule_data_build
)


def router_snapshot_get() -> RouterSnapshot:
    """The current compiled router. The first call in a process trains the classifier
    (about a second); call it at start-up to keep that off the first shopper's turn."""
    data = rule_cache.get()
    return RouterSnapshot(
        rules=data.rules,
        slot_patterns=data.slot_patterns,
        intent_tiers=data.intent_tiers,
        classifier=classifier_get(),
        clarify_threshold=data.clarify_threshold,
        handoff=handoff_scorer_get(),
    )


# --- the decision ----------------------------------------------------------------------


def _top(scores: list[tuple[str, float]]) -> list[list[Any]]:
    return [[intent, round(prob, 4)] for intent, prob in scores[:3]]


def route_decide(
    *,
    text: str,
    language: str,
    snapshot: RouterSnapshot,
    clarify_threshold: float | None = None,
    embedding: np.ndarray | None = None,
    curve_threshold: bool = False,
) -> RouteDecision:
    """The decision for one message against a given snapshot (no database access but
    the cached shop profile's order-id forms).

    ``clarify_threshold`` (a release's router threshold) overrides the point the
    support admin chose on the out-of-scope curve, which overrides the setting;
    ``embedding``: the message's sentence embedding when the caller has it already
    (an evaluation embeds its messages in batches), else computed when needed;
    ``curve_threshold``: ``clarify_threshold`` is a point of the out-of-scope curve
    (compared with the in-scope score, like the admin's point) rather than a
    probability (a release's, the setting)."""
    normalised = text_normalise(text)
    if language not in ("en", "zh"):
        language = language_detect(normalised)
    turn = _Turn(
        text=text,
        normalised=normalised,
        language=language,
        snapshot=snapshot,
        embedding=embedding,
    )
    if not normalised:
        return turn.decided(
            CLARIFY, OUT_OF_SCOPE, 0.0, {"kind": "clarify", "why": "empty", "top": []}
        )

    # Before the rules and any model: a message that tries to change the bot's role or
    # get at its instructions gets the in-role answer, whatever else it asks.
    cue = roleplay_match(normalised)
    if cue is not None:
        return turn.decided(CLARIFY, ROLE_PLAY, 1.0, {"kind": "role_play", "match": cue})
    found = _rules_decide(turn)
    if found is not None:
        return found
    return _classifier_decide(
        turn, clarify_threshold=clarify_threshold, curve_threshold=curve_threshold
    )


class _Turn:
    """One decision's state: the message, the slots found so far and its sentence
    embedding (given, or computed once when a step needs it)."""

    def __init__(
        self,
        *,
        text: str,
        normalised: str,
        language: str,
        snapshot: RouterSnapshot,
        embedding: np.ndarray | None,
    ) -> None:
        self.text = text
        self.normalised = normalised
        self.language = language
        self.snapshot = snapshot
        self.embedding = embedding
        # Whether this decision computed the message's sentence embedding (the bench's
        # share).
        self.computed: dict[str, np.ndarray] = {}
        self.slots: dict[str, str] = {}
        # The shop's own order-id forms (shop profile) before any admin slot pattern.
        if order_id := order_id_find(text):
            self.slots["order_id"] = order_id
        self.scoped: list[CompiledSlotPattern] = []
        for pattern in snapshot.slot_patterns:
            if pattern.intent is not None:
                self.scoped.append(pattern)  # extracted once the intent is known
            elif pattern.name not in self.slots and (value := pattern.extract(normalised)):
                self.slots[pattern.name] = value
        self.handoff_scorer = snapshot.handoff if HANDOFF in snapshot.intent_tiers else None

    def decided(
        self, tier: str, intent: str, confidence: float, reason: dict[str, Any]
    ) -> RouteDecision:
        for pattern in self.scoped:
            if (
                pattern.intent == intent
                and pattern.name not in self.slots
                and (value := pattern.extract(self.normalised))
            ):
                self.slots[pattern.name] = value
        return RouteDecision(
            tier=tier, intent=intent, confidence=confidence, slots=self.slots, reason=reason
        )

    def embedding_of(self, part: str) -> np.ndarray:
        # The whole message's embedding is the classifier's too: computed once.
        if part != self.normalised:
            return message_embedding(part)
        if "whole" not in self.computed:
            self.computed["whole"] = (
                self.embedding if self.embedding is not None else message_embedding(self.text)
            )
        return self.computed["whole"]

    def handoff(self, rules: list[CompiledRule]) -> RouteDecision | None:
        verdict = handoff_decide(
            normalised=self.normalised,
            language=self.language,
            rules=rules,
            scorer=self.handoff_scorer,
            embedding_of=self.embedding_of,
        )
        if not verdict.request:
            return None
        if verdict.tier is not None:  # a rule's
            return self.decided(verdict.tier, HANDOFF, 1.0, verdict.reason)
        confidence = verdict.score if verdict.score is not None else 1.0
        return self.decided(
            self.snapshot.intent_tiers[HANDOFF], HANDOFF, confidence, verdict.reason
        )


# A message that is only an order id, perhaps after an order word ("#1001", "order
# 000000123", "订单号 12345"): the shopper asks about that order.
_BARE_ORDER_ID = re.compile(
    r"^(?:(?:my |the )?order(?: id| no\.?| number)?|订单号?|单号)?\s*[:：]?\s*"
    r"(?P<id>.+?)\s*[?!.。？！]*$"
)


def _bare_order_id(turn: _Turn) -> RouteDecision | None:
    """The shop's own id forms (shop profile) alone in a message ask for its status,
    when no admin rule decided the message first (the seeded rules know only the demo
    form)."""
    tier = turn.snapshot.intent_tiers.get(ORDER_STATUS)
    match = _BARE_ORDER_ID.match(turn.normalised)
    order_id = order_ids().normalize(match["id"]) if match else None
    if tier is None or order_id is None:
        return None
    reason = {
        "kind": "rule",
        "rule": "bare-order-id",
        "rule_kind": "shop_profile",
        "match": order_id,
        "matches": 1,
    }
    return turn.decided(tier, ORDER_STATUS, 1.0, reason)


def _rules_decide(turn: _Turn) -> RouteDecision | None:
    """The rules by priority, the first match deciding. A request for a person
    (routing/handoff_detect.py): the handoff rules and the scorer together, after the
    vetoes, at the handoff rules' priority (before the complaint rules: "this is the
    third late order, get me a real person" asks for one); with no handoff rule, the
    scorer alone just before the classifier."""
    snapshot = turn.snapshot
    handoff_rules = [rule for rule in snapshot.rules if rule.intent == HANDOFF]
    token_count = len(text_tokens(turn.normalised))
    for rule in snapshot.rules:
        if rule.intent == HANDOFF:
            if rule is handoff_rules[0] and (found := turn.handoff(handoff_rules)) is not None:
                return found
            continue
        evidence = rule.evaluate(text=turn.normalised, tokens=token_count, language=turn.language)
        if evidence is not None:
            return turn.decided(
                rule.tier,
                rule.intent,
                1.0,
                {"kind": "rule", "rule": rule.name, "rule_kind": rule.kind, **evidence},
            )
    if (bare := _bare_order_id(turn)) is not None:
        return bare
    if not handoff_rules and turn.handoff_scorer is not None:
        return turn.handoff([])
    return None


def _threshold(
    snapshot: RouterSnapshot, clarify_threshold: float | None, curve_threshold: bool
) -> tuple[float, bool]:
    """(the clarify threshold, whether it is a point of the out-of-scope curve).

    The curve's points are on the in-scope score (top probability and nearest
    example); the setting and a release's threshold are on the probability, so 0.45
    means the same for every shop (with the score, the default data's English tier
    accuracy at 0.45 fell below its target)."""
    if clarify_threshold is not None:
        return clarify_threshold, curve_threshold
    if snapshot.clarify_threshold is not None:
        return snapshot.clarify_threshold, True
    scorer = snapshot.classifier.oos_scorer if snapshot.classifier is not None else None
    if scorer is not None:
        # The shop's own point, calibrated at its retraining (routing.oos_calibration).
        return scorer.threshold, True
    return settings.TIERDESK_ROUTER_CLARIFY_THRESHOLD, False


def _classifier_rank(
    turn: _Turn,
    classifier: TrainedClassifier,
    *,
    threshold: float,
    on_curve: bool,
    embedding: np.ndarray | None,
) -> tuple[list[tuple[str, float]], bool, np.ndarray | None]:
    """(the classifier's ranked intents, whether the message's embedding was used,
    the embedding). The sentence embedding is the slow part (a MiniLM forward pass,
    ~20 ms idle and hundreds under load): a message the TF-IDF-only model is sure of
    (its top probability at the cut chosen at training, and the threshold) is decided
    without it. Also when the caller has the embedding (an evaluation), so that the
    figures are those of the live path."""
    ranked: list[tuple[str, float]] | None = None
    embedded = False
    if classifier.embedding_dim:
        needs = bool(embedding.any()) if embedding is not None else embedding_applies(turn.text)
        # A point of the curve is on the in-scope score, which needs the embedding.
        if needs and not on_curve:
            quick = classifier.predict_without_embedding(text=turn.normalised)
            if (
                quick is not None
                and quick[0][1] >= threshold
                and quick[0][0] in turn.snapshot.intent_tiers
            ):
                ranked = quick
        if ranked is None:
            if embedding is None:
                embedding = message_embedding(turn.text)
            embedded = needs
    if ranked is None:
        ranked = classifier.predict(text=turn.normalised, embedding=embedding)
    return ranked, embedded, embedding


def _oos_view(turn: _Turn, embedding: np.ndarray | None) -> tuple[str, np.ndarray | None]:
    """The embedder that reads the message for the out-of-scope score, and its vector:
    MiniLM's (the classifier's) for English, the multilingual e5's otherwise (the
    retrieval of the same turn asks for it too, from the same cache)."""
    if embedding is not None and embedding.any():
        return MINILM, embedding
    from knowledge import multilingual

    if not multilingual.available():
        return E5, None
    return E5, multilingual.embed_query(turn.text)


def _classifier_decide(
    turn: _Turn, *, clarify_threshold: float | None, curve_threshold: bool
) -> RouteDecision:
    """The classifier's decision, or a clarifying question when it is unsure."""
    snapshot = turn.snapshot
    embedding = turn.computed.get("whole", turn.embedding)
    if snapshot.classifier is None:
        return turn.decided(
            CLARIFY, OUT_OF_SCOPE, 0.0, {"kind": "clarify", "why": "no_classifier", "top": []}
        )
    classifier = snapshot.classifier
    threshold, on_curve = _threshold(snapshot, clarify_threshold, curve_threshold)
    ranked, embedded, embedding = _classifier_rank(
        turn, classifier, threshold=threshold, on_curve=on_curve, embedding=embedding
    )
    # Also when the handoff scorer computed it (a message that names a person; a
    # Chinese message's is zeros, no forward pass).
    embedded = embedded or bool(turn.computed.get("whole", np.zeros(1)).any())
    # The rule and classifier caches refresh independently: an intent disabled after
    # this classifier was trained must still never be chosen.
    scores = [(intent, prob) for intent, prob in ranked if intent in snapshot.intent_tiers]
    if not scores:
        return turn.decided(
            CLARIFY, OUT_OF_SCOPE, 0.0, {"kind": "clarify", "why": "no_intents", "top": []}
        )
    intent, prob = scores[0]
    scorer = classifier.oos_scorer
    if on_curve and scorer is not None:
        view, vector = _oos_view(turn, embedding)
        score = scorer.score(ranked=scores, normalised=turn.normalised, view=view, vector=vector)
        if score is not None:
            prob = score
        # An unsure guess at an order intent asks rather than starting the order flow.
        threshold = max(threshold, scorer.threshold_for(intent, ORDER_INTENTS))
    elif embedded and on_curve:
        # What a point of the curve applies to: with the embedding, the top probability
        # and the nearest training example's similarity (out-of-scope detection).
        prob = classifier.in_scope_score(top_probability=prob, embedding=embedding)
    tier = snapshot.intent_tiers[intent]
    if prob < threshold:
        return turn.decided(
            CLARIFY,
            OUT_OF_SCOPE,
            prob,
            {
                "kind": "clarify",
                "why": "low_confidence",
                "candidate": intent,
                "threshold": threshold,
                "top": _top(scores),
                "embedded": embedded,
            },
        )
    if tier == CLARIFY:
        return turn.decided(
            CLARIFY,
            intent,
            prob,
            {"kind": "clarify", "why": intent, "top": _top(scores), "embedded": embedded},
        )
    return turn.decided(
        tier, intent, prob, {"kind": "classifier", "top": _top(scores), "embedded": embedded}
    )


def route_message(
    *, text: str, language: str, clarify_threshold: float | None = None
) -> RouteDecision:
    """Route one shopper message. Sync and CPU-bound: call it off the event loop.

    ``language`` is the conversation's language ("en"/"zh"); anything else is
    detected from the text. ``elapsed_ms`` covers the whole call.
    """
    started = time.perf_counter()
    decision = route_decide(
        text=text,
        language=language,
        snapshot=router_snapshot_get(),
        clarify_threshold=clarify_threshold,
    )
    return replace(decision, elapsed_ms=(time.perf_counter() - started) * 1000)
