"""The output guards behind one interface (``Guard``).

- ``FactGuard`` (L1): every number and carrier in the fast model's phrasing must be
  among the order's facts, and the required facts must all appear; otherwise the
  template text goes out (``inference.fact_guard.StreamGuard``, streaming).
- ``LeakGuard`` (every chat model): the system prompt and its canary never reach the
  shopper; on a leak the reply becomes a refusal (``inference.leak``).
- ``EntailmentGuard`` (L2, L3 policy): each sentence is shown only once the
  entailment check (``knowledge.entail``) finds it backed by the cited passages;
  others are dropped, and with none left the passage extract goes out.
- ``GroundedGuard`` (L3): the same, against the shop's records the model was given,
  with the fact guard's rule for order facts and model boilerplate stripped; with
  nothing left, "can't confirm, would you like a person?".

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
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from inference.base import InferenceError
from inference.fact_guard import GuardVerdict, StreamGuard, guard_check
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

    async def drain(self) -> str:
        """Text held back by ``feed`` that is now checked and may be shown ("" : none).
        Async, so a guard can check off the event loop."""


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

    async def drain(self) -> str:
        return ""

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

    async def drain(self) -> str:
        return ""

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


# A price whose cents come after a space ("$14. 99"), and a buffer that may end in one.
_BROKEN_PRICE = re.compile(r"([$€£¥]\d+)\.\s+(\d{2})(?!\d)")
_OPEN_PRICE = re.compile(r"[$€£¥]\d+\.(?:\s+\d?)?$")
# A stream that stops on a figure with no sentence end after it was most likely cut by
# the token limit inside that figure: "... price $2" of "$219.43" (make eval-answers,
# 2026-12-03: an L3 summary of catalogue rows ended so, and the shopper read "$2").
_CUT_FIGURE = re.compile(r"\d\s*$")


class EntailmentGuard:
    """L2 (and L3's policy claims): each sentence is released only after the
    entailment check (``knowledge.entail``) finds it backed by the cited passages.

    The model's text is held until a sentence ends; the sentence is checked off the
    event loop (``drain``) and shown if entailed, dropped if not. So a shopper never
    sees a claim that is later withdrawn. Nothing entailed at all: the best passage's
    own sentences (``extract``) go out; the model said it doesn't know: ``dont_know``."""

    def __init__(
        self,
        *,
        question: str,
        passages: list[str],
        extract: str,
        dont_know: str,
        pointed: Mapping[str, Any] | None = None,
    ) -> None:
        self.question = question
        self.passages = passages
        self.extract = extract
        self.dont_know = dont_know
        # The hedged quote of the best passage and its marker (``knowledge.pointing``):
        # what goes out when a sentence states a branch of a rule that may not cover
        # the case the question names (a place, a sum: ``knowledge.named_case``).
        self.pointed = pointed
        self._other_case = False
        self.verdict = Verdict()
        self._buffer = ""
        self._released = 0
        self._dropped: list[dict[str, str]] = []
        self._refused = False
        # The sentences shown so far, as checked; whether the last one judged was.
        self._shown: list[str] = []
        self._last_shown = False

    def feed(self, text: str, marks: Mapping[str, Any]) -> str | None:
        self._buffer += text
        return ""

    async def _release(self, final: bool) -> str:
        from knowledge import entail

        # The reader model writes some prices with a space after the decimal point
        # ("$14. 99": its digits are tokens of their own): one price, not a sentence
        # that ends at "$14." (which the check dropped as a wrong number).
        self._buffer = _BROKEN_PRICE.sub(r"\1.\2", self._buffer)
        # The last piece may be an unfinished sentence: keep it unless the stream ended.
        if not final:
            # A "." at the very end of the buffer may be a decimal point ("$218." before
            # "04" arrives), and so may a price's "." before a space ("$14. " before
            # "99"): only whitespace after it, or a CJK stop, ends a sentence.
            price = _OPEN_PRICE.search(self._buffer)
            limit = price.start() if price else len(self._buffer)
            ended = [
                m.end()
                for m in entail.SENTENCE.finditer(self._buffer)
                if 0 < m.end() <= limit
                and not (m.end() == len(self._buffer) and self._buffer[-1] in ".!?")
            ]
            if not ended:
                return ""
            cut = ended[-1]
            ready, self._buffer = self._buffer[:cut], self._buffer[cut:]
        else:
            ready, self._buffer = self._buffer, ""
        pieces = entail.sentences(ready)
        if final and pieces and _CUT_FIGURE.search(pieces[-1]):
            piece = pieces.pop()
            self._dropped.append(
                {"text": piece, "label": "cut", "reason": "the reply stopped inside a figure"}
            )
        out: list[str] = []
        for sentence in pieces:
            if entail.is_refusal(sentence):
                self._refused = True
                continue
            # jieba and the stemmer are CPU work: off the event loop.
            label, reason = await asyncio.to_thread(self._judge, sentence)
            if label == "entailed":
                out.append(sentence)
            else:
                self._dropped.append({"text": sentence, "label": label, "reason": reason})
        if not out:
            return ""
        self._shown.extend(out)
        cjk = any("\u4e00" <= ch <= "\u9fff" for ch in "".join(out))
        text = ("" if cjk else " ").join(out)
        if self._released and not cjk:
            text = " " + text
        self._released += len(out)
        return text

    # A sentence opening on a pronoun ("It is the only washing advice we give.") is not
    # shown unless the sentence before it was: "it" would be whatever the model meant,
    # which the shopper never saw (L3 has its own rule, ``GroundedGuard._judge_place``).
    dangling_check = True

    def _judge(self, sentence: str) -> tuple[str, str]:
        """("entailed", "") if ``sentence`` may be shown, else (label, why). Blocking."""
        from knowledge import entail

        claim = entail.claim_check(sentence, self.passages, question=self.question)
        label: str = claim.label
        reason = claim.reason
        if label == "entailed" and self.pointed:
            from knowledge.named_case import branch_mismatch

            # Backed by the passage, but a branch for another case than the shopper's.
            why = branch_mismatch(self.question, sentence)
            if why:
                label, reason = "other_case", why
                self._other_case = True
        if self.dangling_check:
            if label == "entailed" and entail.opens_on_pronoun(sentence) and not self._last_shown:
                label, reason = "dangling", "opens on a pronoun whose sentence was not shown"
            self._last_shown = label == "entailed"
        return label, reason

    async def drain(self) -> str:
        return await self._release(final=False)

    async def finish(self, text: str) -> str | None:
        tail = await self._release(final=True)
        meta = {"unsupported_claims": self._dropped[:5]} if self._dropped else {}
        if self.pointed and (self._other_case or not self._released):
            pointed = await self._pointed_instead(meta)
            if pointed is not None:
                self.verdict = pointed
                return None
        if self._released:
            label = "trimmed" if self._dropped else "passed"
            self.verdict = Verdict(ok=True, label=label, meta=meta)
            added = await asyncio.to_thread(self._completion)
            if added:
                cjk = any("\u4e00" <= ch <= "\u9fff" for ch in added)
                tail += ("" if cjk else " ") + added
                self.verdict.meta["extract_added"] = True
            return tail
        if self._refused and not self._dropped and not self.extract:
            self.verdict = Verdict(
                ok=False, label="abstained", reason="model didn't know", replacement=self.dont_know
            )
        elif self._refused and not self._dropped:
            # The reader said it doesn't know, but planning found a passage that holds
            # what the question asks (the coverage check): the small reader misses
            # answers that are there (three answerable questions of the 06:42 run, no
            # unanswerable one: those are stopped before any model runs). The
            # passage's own sentences go out, as when nothing it wrote was backed.
            logger.info("entailment guard: the model didn't know; sending the extract")
            self.verdict = Verdict(
                ok=False,
                label="extract",
                reason="model didn't know; the passage's sentences",
                replacement=self.extract,
            )
        else:
            logger.info("entailment guard: nothing entailed; sending the extract: %s", meta)
            self.verdict = Verdict(
                ok=False,
                label="extract",
                reason="no entailed sentence",
                replacement=self.extract,
                meta=meta,
            )
        return None

    async def _pointed_instead(self, meta: dict[str, Any]) -> Verdict | None:
        """The hedged quote instead of the reply: a sentence stated another case's
        branch, or nothing was backed and the extract that would go out states one
        (``extract_other_case``, decided when the plan was made)."""
        assert self.pointed is not None
        if not self._other_case and not self.pointed.get("extract_other_case"):
            return None
        logger.info("entailment guard: another case's branch; sending the quote")
        return Verdict(
            ok=False,
            label="pointed",
            reason="a branch of the rule for another case than the question's",
            replacement=str(self.pointed["text"]),
            meta=meta | {"pointed": self.pointed["marker"]},
        )

    def _completion(self) -> str:
        """What follows the released sentences when they say too little: when all
        that passed is a bare "No."/"不会。", or a sentence was dropped and the
        extract holds more of the question's words, the extract's sentences that the
        shown ones don't already say. The model's
        answer to "will I drop from Gold straight to guest?" was "不会。" plus a
        sentence the check dropped (the one saying by how much): the shopper got
        "不会。" alone. A shown answer that only says the question back ("退款能马上给。")
        counts as a bare particle (``entail.echoes``). The extract is the passage's own
        words, so nothing is added that the shop didn't write, and nothing shown is
        withdrawn. Blocking."""
        from knowledge import entail
        from knowledge.coverage import question_coverage

        if not self.extract:
            return ""
        shown = " ".join(self._shown)

        def bare(sentence: str) -> bool:
            return entail.says_nothing(sentence) or entail.echoes(sentence, self.question)

        if not all(bare(s) for s in self._shown):
            if not self._dropped:
                return ""
            # After a dropped sentence, only when the passage's sentences hold more of
            # the question than what was shown: a dropped aside ("soak them overnight")
            # takes nothing from an answer that already says what was asked.
            before = question_coverage(self.question, [shown]).share
            after = question_coverage(self.question, [shown, self.extract]).share
            if after <= before:
                return ""

        def said(sentence: str) -> bool:
            # Already shown: the same claim, or a shown sentence restates it.
            if sentence in shown or entail.claim_check(sentence, [shown]).label == "entailed":
                return True
            return any(
                not bare(s) and entail.claim_check(s, [sentence]).label == "entailed"
                for s in self._shown
            )

        out = [s for s in entail.sentences(self.extract) if not said(s)]
        if not out:
            return ""
        cjk = any("\u4e00" <= ch <= "\u9fff" for ch in "".join(out))
        return ("" if cjk else " ").join(out)

    def model_failed(self, error: InferenceError) -> bool:
        return False


# Model boilerplate that is never a shop's answer: a shopper is not told what an AI
# model can or can't do, or what it "has access to".
BOILERPLATE = re.compile(
    r"\b(as an? (ai|artificial intelligence)( language)?( model| assistant)?|"
    r"i('m| am) (just |only )?an? (ai|language model|virtual assistant|chatbot)|"
    r"(large )?language model|i (don't|do not|cannot|can't) have access|"
    r"i (don't|do not) have (real-time|personal|direct) |my (training|knowledge) cutoff)"
    r"|作为(一个)?(人工智能|AI|语言模型)|我(只)?是(一个)?(人工智能|AI|语言模型)|我无法访问",
    re.IGNORECASE,
)


class GroundedGuard(EntailmentGuard):
    """L3: the large model's reply against the shop's records it was given (the
    shopper's orders, catalogue rows, help-article passages: ``l3_records.ShopContext``).

    Sentence by sentence, like ``EntailmentGuard`` (held until it ends, then shown or
    dropped, never withdrawn), each sentence must:

    - not be model boilerplate ("As an AI language model", "I don't have access");
    - carry only order facts that are in the records: every id, amount, date, tracking
      number and carrier (the L1 fact guard's rule, ``inference.fact_guard.guard_check``);
    - be entailed by the records (``knowledge.entail``: statuses, policy claims,
      negations), unless it is pure courtesy (no content words).

    With nothing left, the shopper is told we can't confirm it and offered a person
    (``abstain``, which quotes the help article's sentences on the question only when
    that article covers it: ``l3_records.kb_extract``).

    When all the model said is a summary of the records ("You are not signed in, so
    your orders are not available."), it answered nothing the shopper asked: the same
    article sentences (``rule``) follow it, word for word, so a rule question from a
    shopper nobody knows still gets the shop's rule.
    """

    def __init__(
        self,
        *,
        question: str,
        passages: list[str],
        abstain: str,
        rule: str = "",
        bare: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__(question=question, passages=passages, extract=abstain, dont_know=abstain)
        self.dangling_check = False  # its own rule: ``_judge_place``
        self.facts = "\n".join(passages)
        self.rule = rule
        self.bare = bare
        # Sentences judged so far, whether the last one was shown, whether any was.
        self._judged = 0
        self._last_ok = False
        self._any_ok = False

    def _completion(self) -> str:
        # The "extract" here is the abstain text; L3 adds the article's rule itself.
        return ""

    def _judge(self, sentence: str) -> tuple[str, str]:
        # Called once per sentence, in order (``_release`` awaits each): the state of
        # the one before it is known.
        label, reason = self._judge_claim(sentence)
        if label == "entailed":
            label, reason = self._judge_place(sentence)
        self._judged += 1
        self._last_ok = label == "entailed"
        self._any_ok = self._any_ok or self._last_ok
        return label, reason

    def _judge_claim(self, sentence: str) -> tuple[str, str]:
        if BOILERPLATE.search(sentence):
            return "boilerplate", "model boilerplate"
        fact = guard_check(text=sentence, facts={"records": self.facts}, required=[])
        if not fact.ok:
            return "invented_fact", fact.reason
        return super()._judge(sentence)

    def _judge_place(self, sentence: str) -> tuple[str, str]:
        """A backed sentence that would still mislead where it stands:

        - the first one shown must be about the question (share a word with it): the
          model once answered the backpacks-and-refund question with only "It is
          available in a large compartment laptop and is priced at $219.43." (true
          of a catalogue row, and no answer to anything asked);
        - one that opens on a pronoun right after a dropped sentence: "it" is then
          whatever the dropped sentence named, which the shopper never saw;
        - courtesy ("Sure!", "Happy to help!") only after an answer.
        A summary of the records ("There is no refund on record ...") always stands."""
        from knowledge import entail

        if sentence.strip() in self.bare:
            return "entailed", ""
        if entail.says_nothing(sentence):
            # "Sure!" before any answer: shown alone, it would be the whole reply.
            return ("entailed", "") if self._any_ok else ("courtesy", "courtesy before an answer")
        if not self._any_ok and not entail.touches(sentence, self.question):
            return "off_topic", "the first sentence shown says nothing about the question"
        if self._judged and not self._last_ok and entail.opens_on_pronoun(sentence):
            return "dangling", "opens on a pronoun whose sentence was dropped"
        return "entailed", ""

    async def finish(self, text: str) -> str | None:
        tail = await super().finish(text)
        if tail is None:
            # Nothing backed (or only "I don't know"): one label, the abstain text.
            self.verdict.label = "abstained"
            self.verdict.meta.setdefault("abstained", True)
        elif self.rule and all(s.strip() in self.bare for s in self._shown):
            cjk = any("\u4e00" <= ch <= "\u9fff" for ch in self.rule)
            tail += ("" if cjk else " ") + self.rule
            self.verdict.meta["rule_added"] = True
        return tail
