"""A second opinion where L2's lexical coverage check refuses a passage: the reader
model is asked whether the passage answers the question, yes or no.

The coverage check (``coverage.question_coverage``) counts a question word the passage
doesn't contain as "not covered"; a shopper's own word for the thing ("coat" for
"jacket", 理由 for 原因) then turns an answerable question into "I don't know". The
model reads meaning rather than words. It only ever widens what may be *attempted*:
every sentence of the answer still has to pass the entailment guard before a shopper
sees it. Blocking (inference): call it from a worker thread.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from inference.base import ChatMessage, GenerationRequest
from inference.sanitize import prompt_sanitize

if TYPE_CHECKING:
    from .retrieval import Passage

logger = logging.getLogger(__name__)

# In English for questions in both languages: Qwen reads both, and the verdict is a word.
SYSTEM = (
    "You check a shop's help article. Decide whether the passage states the answer to "
    "the shopper's question, even if it uses other words. Answer no if the passage is "
    "only about a related topic and does not say what the shopper asks. Reply with one "
    "word: yes or no."
)
_YES = re.compile(r"^\W*(yes|是|对|能|可以)\b", re.IGNORECASE)


def judge_request(question: str, passages: list[Passage]) -> GenerationRequest:
    text = "\n".join(
        f"{p.title} › {p.heading}: {' '.join(p.text.split())}" if p.heading else p.text
        for p in passages
    )
    user = f"Passage:\n{text}\n\nQuestion: {prompt_sanitize(question)}\nAnswer (yes or no):"
    return GenerationRequest(
        messages=(ChatMessage("system", SYSTEM), ChatMessage("user", user)),
        max_tokens=2,
        temperature=0.0,
        seed=11,
    )


def judge_role() -> str | None:
    """The role that judges, or None when the judge is off. ``auto`` (the default)
    judges only with more than the 0.5B fallback behind the role: on the tuned sets'
    refused questions the 0.5B said "no" every time (bench/results/judge_probe.json)."""
    from django.conf import settings

    from inference.registry import resolve_role

    mode = settings.TIERDESK_KB_JUDGE
    role = settings.TIERDESK_KB_JUDGE_ROLE
    if mode == "off":
        return None
    if mode == "auto" and resolve_role(role) == "fallback":
        return None
    return role


def answers_question(question: str, passages: list[Passage], *, role: str = "fallback") -> bool:
    """True when the model says the passages answer the question; False on "no", on
    anything else it says, and when the model fails (the caller then keeps the
    coverage check's refusal: not knowing is the safe side)."""
    from inference.registry import get_backend

    try:
        backend = get_backend(role)
        reply = "".join(c.text for c in backend.stream(judge_request(question, passages)))
    except Exception:
        logger.exception("answerability judge failed; keeping the coverage check's refusal")
        return False
    return bool(_YES.match(reply))
