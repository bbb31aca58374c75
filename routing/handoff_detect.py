"""Recognising a request for a person (docs/routing.md "Asking for a person").

The ``handoff-request`` rule alone missed phrasings it was not written for and fired on
messages that mention a person without asking for one ("I don't need a human", "what
hours is your support team online"). Three parts decide together:

- **vetoes** (routing/handoff_vetoes.py): a clause that declines a person ("no need
  for an agent", "不用转人工"), asks what the bot is or remarks on it ("are you a
  human?", "你说话像真人"), asks for contact details or opening hours (or whether
  someone works on Sundays), asks about the queue or the process ("how long is the wait
  for an agent", "什么情况下会转人工", a question after a condition), asks whether one has
  to contact someone, says the shopper is human ("prove i'm not a robot"), reports a
  person's words or a wait from before or compares the bot with people ("上次人工客服答应…"),
  or names a contact person as a field, is no request; the rest of the message still
  counts ("are you a bot? I want a person" is one);
- **the rule** (the router's rules of the ``handoff`` intent, admin-editable); asking
  for a manager or supervisor is asking for a person;
- **a scorer** (routing/handoff_scorer.py): logistic regression over TF-IDF
  character/word n-grams and, for English, the router's MiniLM sentence embedding. It
  catches the requests the rule has no pattern for.

The rule and the scorer decide together at the handoff rules' priority, before the
complaint rules; a rule's match counts only when the scorer gives it at least
``handoff_scorer.GATE``. A message with no word for a person, a team, support, a bot or
a callback never reaches the scorer (routing/handoff_cue.py), so most messages cost one
regex.
The threshold, the gate and the regularisation were chosen by the honest
cross-validation over the blind sets (``python -m bench.command handoff_cv --honest``,
bench/handoff_cv.py; docs/routing.md).
Sync and CPU-bound like the rest of the router: call it off the event loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from routing.handoff_cue import handoff_cue
from routing.handoff_scorer import HandoffScorer
from routing.handoff_vetoes import handoff_remainder
from routing.normalise import text_tokens


@dataclass(frozen=True)
class HandoffVerdict:
    request: bool
    score: float | None  # the scorer's, when it ran
    reason: dict[str, Any]
    tier: str | None = None  # the matching rule's tier, when a rule decided


class HandoffRule(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def tier(self) -> str: ...

    def evaluate(self, *, text: str, tokens: int, language: str) -> dict[str, Any] | None: ...


def handoff_decide(
    *,
    normalised: str,
    language: str,
    rules: Sequence[HandoffRule],
    scorer: HandoffScorer | None,
    embedding_of: Callable[[str], np.ndarray | None],
    upto: int | None = None,
) -> HandoffVerdict:
    """Whether ``normalised`` asks for a person: the handoff rules and the scorer on what
    is left after the vetoed clauses. The router asks at the handoff rules' priority, so
    a request inside a complaint is decided before the complaint rules (angry-complaint,
    two-requests) take it. A rule match counts when the scorer gives it at
    least ``scorer.gate``; the scorer alone at ``scorer.threshold`` (both chosen by
    grouped cross-validation, docs/routing.md). ``embedding_of(text)``: that text's
    sentence embedding; ``upto``: only the vetoes of that round and before (the
    cross-validation)."""
    remainder, vetoed = decision_remainder(normalised, upto=upto)
    if not remainder:
        return HandoffVerdict(False, None, vetoed)
    tokens = len(text_tokens(remainder))
    matched: tuple[HandoffRule, dict[str, Any]] | None = None
    for rule in rules:
        evidence = rule.evaluate(text=remainder, tokens=tokens, language=language)
        if evidence is not None:
            matched = (
                rule,
                {"kind": "rule", "rule": rule.name, "rule_kind": rule.kind, **evidence},
            )
            break
    # With no gate a rule match needs no score (nor the embedding it would cost).
    if matched is not None and (scorer is None or scorer.gate <= 0):
        return HandoffVerdict(True, None, {**matched[1], **vetoed}, matched[0].tier)
    if scorer is None:
        return HandoffVerdict(False, None, vetoed)
    embedding = embedding_of(remainder) if scorer.embedding_dim else None
    score = scorer.score(normalised=remainder, embedding=embedding)
    if matched is not None:
        if score >= scorer.gate:
            reason = {**matched[1], "score": round(score, 4), **vetoed}
            return HandoffVerdict(True, score, reason, matched[0].tier)
        # The rule's words without the scorer's backing.
        vetoed = {**vetoed, "gated": matched[0].name}
    reason = {"kind": "handoff_scorer", "score": round(score, 4), "threshold": scorer.threshold}
    return HandoffVerdict(score >= scorer.threshold, score, {**reason, **vetoed})


def decision_remainder(normalised: str, *, upto: int | None = None) -> tuple[str, dict[str, Any]]:
    """The text left to decide on ("" when nothing names a person), and the vetoes as
    a reason (the router's shape: a rule's reason stays the rule's)."""
    if not handoff_cue(normalised, upto=upto):
        return "", {}
    remainder, vetoes = handoff_remainder(normalised, upto=upto)
    if not handoff_cue(remainder, upto=upto):
        remainder = ""
    return remainder, ({"vetoed": vetoes} if vetoes else {})
