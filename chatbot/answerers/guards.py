"""The three output guards behind one interface (``Guard``).

- ``FactGuard`` (L1): every number and carrier in the fast model's phrasing must be
  among the order's facts, and the required facts must all appear; otherwise the
  template text goes out (``inference.guard.StreamGuard``, streaming).
- ``LeakGuard`` (every chat model): the system prompt and its canary never reach the
  shopper; on a leak the reply becomes a refusal (``inference.leak``).
- ``GroundingGuard`` (L2): every claim of the finished answer must be backed by the
  cited passages; unsupported sentences are dropped, or the passage extract goes out
  (``knowledge.grounding.answer_guard``).

Why here, as adapters, and not in one lower package: the leak check must run inside
``inference.resilience.model_stream`` (before the response cache stores a reply, and
reset when the fallback restarts a reply), so it lives in ``inference``; the
grounding check needs ``knowledge``'s tokenizers (jieba, the stemmer), which
``inference`` may not import. ``chatbot`` is the lowest layer that sees all three, so
the interface and the adapters live here and each algorithm stays with its
dependencies. The turn (``base.model_answer``) knows only ``Guard``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from inference.base import InferenceError
from inference.guard import GuardVerdict, StreamGuard
from inference.leak import REFUSAL
from inference.resilience import LEAK

logger = logging.getLogger(__name__)


@dataclass
class Verdict:
    ok: bool = True
    # What the reply records as its ``guard`` (done frame, metadata); "" : nothing.
    label: str = ""
    reason: str = ""
    # What the shopper is shown instead when not ok (None: leave the reply as it is).
    replacement: str | None = None
    # The replacement goes out as one chunk when nothing was shown yet (else word by word).
    whole: bool = False
    # Added to the stored reply's metadata when the guard tripped.
    meta: dict[str, Any] = field(default_factory=dict)


class Guard(Protocol):
    verdict: Verdict

    def feed(self, text: str, marks: Mapping[str, Any]) -> str | None:
        """Model text (and the stream's markers, ``GenerationChunk.extra``) in; the text
        safe to show now out ("" while held back), or None: tripped, stop generating."""

    async def finish(self, text: str) -> str | None:
        """The stream ended; ``text`` is the whole reply shown. A tail to show, or None:
        tripped (``verdict.replacement`` replaces the reply)."""

    def model_failed(self, error: InferenceError) -> bool:
        """The model failed mid-reply: True if the partial reply must not stand."""


class LeakGuard:
    """The turn's side of ``inference.leak.LeakGuard``: ``model_stream`` watches the
    text and ends the stream with a ``leak`` marker; the reply becomes a refusal."""

    def __init__(self, language: str) -> None:
        self.language = language
        self.verdict = Verdict()

    def feed(self, text: str, marks: Mapping[str, Any]) -> str | None:
        if not marks.get(LEAK):
            return text
        self.verdict = Verdict(
            ok=False,
            reason=str(marks[LEAK]),
            replacement=REFUSAL.get(self.language, REFUSAL["en"]),
            whole=True,
            meta={"leak_blocked": marks[LEAK]},
        )
        return None

    async def finish(self, text: str) -> str | None:
        return ""  # model_stream already released the held-back tail

    def model_failed(self, error: InferenceError) -> bool:
        return False


class FactGuard:
    """L1: the fast model's phrasing against the order's facts (streaming)."""

    def __init__(self, *, facts: dict[str, str], required: list[str], template_text: str) -> None:
        self.template_text = template_text
        self.stream = StreamGuard(facts=facts, required=required, template_text=template_text)
        self.verdict = Verdict()

    def _fail(self, reason: str) -> None:
        logger.info("fact guard: %s; sending the template", reason)
        self.verdict = Verdict(
            ok=False, label="template", reason=reason, replacement=self.template_text
        )

    def feed(self, text: str, marks: Mapping[str, Any]) -> str | None:
        released = self.stream.feed(text)
        if released is None:
            self._fail(self.stream.verdict.reason)
        return released

    async def finish(self, text: str) -> str | None:
        tail = self.stream.finish()
        if tail is None:
            self._fail(self.stream.verdict.reason)
            return None
        self.verdict = Verdict(ok=True, label="passed")
        return tail

    def model_failed(self, error: InferenceError) -> bool:
        self.stream.verdict = GuardVerdict(False, f"model error: {error.code}")
        self._fail(self.stream.verdict.reason)
        return True


class GroundingGuard:
    """L2: the finished answer against its cited passages.

    It checks when the answer is complete because a claim is a sentence: the widget
    shows the streamed text, and a replace frame swaps in the checked version if it
    differs."""

    def __init__(self, *, question: str, passages: list[str], extract: str) -> None:
        self.question = question
        self.passages = passages
        self.extract = extract
        self.verdict = Verdict()

    def feed(self, text: str, marks: Mapping[str, Any]) -> str | None:
        return text

    async def finish(self, text: str) -> str | None:
        from knowledge.grounding import answer_guard

        if not text:
            return ""
        # jieba and the stemmer are CPU work: off the event loop.
        checked = await asyncio.to_thread(
            answer_guard, text, self.passages, question=self.question, extract=self.extract
        )
        if checked.verdict == "passed":
            self.verdict = Verdict(ok=True, label="passed")
            return ""
        logger.info("grounding guard: %s; unsupported: %s", checked.verdict, checked.unsupported)
        self.verdict = Verdict(
            ok=False,
            label=checked.verdict,
            reason="unsupported claims",
            replacement=checked.text,
            meta={"unsupported_claims": checked.unsupported[:5]},
        )
        return None

    def model_failed(self, error: InferenceError) -> bool:
        return False
