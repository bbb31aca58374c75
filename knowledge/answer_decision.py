"""L2's answerability decision, by the fitted classifier (``knowledge.answerability``).

``answer_plan`` asks ``answerability_decision`` first. ``unrelated``: it says it
doesn't know (no section is quoted). ``answers`` or ``about``: the answer is written
from the decided section first (then the other relevant passages, as room allows)
once the coverage check (or the judge) confirms it, and the entailment guard checks
it sentence by sentence; when nothing confirms it, that section is quoted
(``knowledge.pointing``), never as an answer. An ``about`` section goes through the
same check rather than straight to its quote: on the demo shop's dev split the
classifier calls "about" many sections that the check confirms and that answer
correctly. None (the classifier off, or its model unusable): the relevance and
pointing thresholds decide, as before it existed.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from django.conf import settings

from .answerability import Decision, ModelError, decide_for
from .answerability_features import section_key
from .pointing import Pointer
from .retrieval import Passage

logger = logging.getLogger(__name__)


def answerability_decision(
    question: str, language: str, explain: dict[str, Any]
) -> Decision | None:
    """The classifier's decision, recorded in ``explain``; None when it is off or its
    model can't be loaded (logged: the thresholds then decide)."""
    if not settings.TIERDESK_KB_ANSWERABILITY:
        return None
    try:
        decision = decide_for(question, language)
    except (ModelError, OSError):
        logger.exception("answerability model unusable; the thresholds decide")
        return None
    explain["answerability"] = decision.record()
    return decision


def decided_passages(decision: Decision, passages: list[Passage]) -> list[Passage]:
    """The decided section's passages first (as relevant), then the others, for L2's
    context selection."""
    assert decision.candidate is not None
    key = decision.candidate.key
    own = [dataclasses.replace(p, relevant=True) for p in decision.candidate.passages]
    return [*own, *(p for p in passages if section_key(p) != key)]


def decided_pointer(decision: Decision) -> Pointer:
    """The decided section, as the thing a pointed reply quotes."""
    assert decision.candidate is not None
    best = decision.candidate.best
    key = decision.candidate.key
    chance = max(
        (s[decision.label] for s in decision.scored if (s["document_id"], s["anchor"]) == key),
        default=0.0,
    )
    return Pointer(passage=best, similarity=float(chance), lead=0.0, embedder="answerability")
