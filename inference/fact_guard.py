"""The number and fact guard for L1 replies (docs/product.md, "Fact guard").

A 270M model can garble numbers and drop facts. The guard works in both directions:
- nothing the facts don't say: every id, amount, date, tracking number or carrier
  name in the model's text must be among the facts (or in the reply template);
- the facts the intent needs: the required values (order id, status phrase, date,
  carrier, tracking) must all appear by the end.
If either fails, the plain template text is sent instead.

``StreamGuard`` checks incrementally so text can stream: it releases text up to the
last completed token and holds back a token that may still be growing ("#10" could
become "#1001").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

# A "protected" token: anything with a digit (ids, amounts, dates, tracking numbers).
_TOKEN = re.compile(r"[#$€£¥]?[A-Za-z]*[0-9][A-Za-z0-9.,:/\-]*")
_TOKEN_CHARS = re.compile(r"[#$€£¥A-Za-z0-9.,:/\-]")
CARRIERS = ("UPS", "FedEx", "USPS", "DHL", "SF Express", "顺丰", "EMS")
# A Latin carrier's name is a whole word: without the boundaries "items" read as EMS
# and "groups" as UPS, and the guard dropped a faithful sentence (seen in the L3
# backpack test's replies, 2026-12-02). Chinese names have no word boundaries to need.
_CARRIER_RE = re.compile(
    "|".join(
        rf"(?<![A-Za-z0-9]){re.escape(c)}(?![A-Za-z0-9])" if c.isascii() else re.escape(c)
        for c in CARRIERS
    ),
    re.IGNORECASE,
)


def _norm(token: str) -> str:
    return token.strip("#$€£¥.,:/-").replace(",", "").lower()


def fact_tokens(text: str) -> set[str]:
    """The normalised ids, amounts, dates and codes in ``text`` (what the guard compares)."""
    return {_norm(t) for t in _TOKEN.findall(text) if _norm(t)}


@dataclass
class GuardVerdict:
    ok: bool
    reason: str = ""


@dataclass
class StreamGuard:
    facts: dict[str, str]
    required: list[str]
    template_text: str = ""
    _allowed: set[str] = field(default_factory=set, init=False)
    _allowed_carriers: set[str] = field(default_factory=set, init=False)
    _buffer: str = field(default="", init=False)
    _seen: str = field(default="", init=False)
    verdict: GuardVerdict = field(default_factory=lambda: GuardVerdict(True), init=False)

    def __post_init__(self) -> None:
        source = " ".join([*self.facts.values(), self.template_text])
        self._allowed = fact_tokens(source)
        # Parts of a composite fact ("2026-11-12" allows "2026", "11", "12").
        for tok in list(self._allowed):
            self._allowed.update(p for p in re.split(r"[.\-/:]", tok) if p)
        self._allowed_carriers = {c.lower() for c in _CARRIER_RE.findall(source)}

    def _check(self, text: str) -> GuardVerdict:
        for tok in _TOKEN.findall(text):
            norm = _norm(tok)
            if norm and norm not in self._allowed:
                return GuardVerdict(False, f"unsupported value {tok!r}")
        for carrier in _CARRIER_RE.findall(text):
            if carrier.lower() not in self._allowed_carriers:
                return GuardVerdict(False, f"unsupported carrier {carrier!r}")
        return GuardVerdict(True)

    def feed(self, text: str) -> str | None:
        """Add model text; return what is safe to release now, or None once failed."""
        if not self.verdict.ok:
            return None
        self._buffer += text
        # Hold back a trailing run of token characters: it may still grow.
        cut = len(self._buffer)
        while cut > 0 and _TOKEN_CHARS.match(self._buffer[cut - 1]):
            cut -= 1
        if not self._seen.strip() and _first_word_safe(self._buffer[cut:]):
            cut = len(self._buffer)
        release, self._buffer = self._buffer[:cut], self._buffer[cut:]
        return self._release(release)

    def _release(self, text: str) -> str | None:
        if not text:
            return ""
        verdict = self._check(text)
        if not verdict.ok:
            self.verdict = verdict
            return None
        self._seen += text
        return text

    def finish(self) -> str | None:
        """Release the held-back tail and check the required facts; None if failed."""
        if not self.verdict.ok:
            return None
        tail = self._release(self._buffer)
        self._buffer = ""
        if tail is None:
            return None
        missing = [value for value in self.required if not _contains(self._seen, value)]
        if missing:
            self.verdict = GuardVerdict(False, f"missing required facts {missing}")
            return None
        if not self._seen.strip():
            self.verdict = GuardVerdict(False, "empty reply")
            return None
        return tail


_WORD = re.compile(r"[A-Za-z]{2,}")


def _first_word_safe(run: str) -> bool:
    """The reply's first word may go out before the token after it (holding it costs
    one decoding step of the first chunk, ~20 ms), when it is letters only and
    begins no carrier's name. What grows from such a word is checked on its own: digits
    glued to it ("Your" + "123") are checked as "123", a stricter check than the glued
    token would get unless "123" is itself a fact; a carrier is checked whole, since no
    carrier's name begins with it."""
    return bool(_WORD.fullmatch(run)) and not any(
        c.lower().startswith(run.lower()) for c in CARRIERS
    )


def _contains(text: str, value: str) -> bool:
    if not value:
        return True
    if value.lower() in text.lower():
        return True
    # Tolerate "#1001" written as "1001", or "$47.84" as "47.84".
    norm = _norm(value)
    return bool(norm) and norm in fact_tokens(text)


def guard_check(
    *, text: str, facts: dict[str, str], required: Iterable[str], template_text: str = ""
) -> GuardVerdict:
    """Check a whole reply at once (tests, evaluation)."""
    guard = StreamGuard(facts=facts, required=list(required), template_text=template_text)
    if guard.feed(text) is None or guard.finish() is None:
        return guard.verdict
    return GuardVerdict(True)
