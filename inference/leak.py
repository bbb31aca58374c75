"""Prompt-injection defence on the way out: the system prompt and its canary never
reach the shopper (docs/product.md, injection defence; docs/resilience.md).

The system prompt of every chat tier ends with an internal note that carries a canary
(a secret token derived from the server's secret key). ``LeakGuard`` watches a reply
as it streams:

- the canary, in any case and with any spacing or punctuation inside, is a leak;
- a run of ``RUN_LEAK`` consecutive words (or CJK characters) of the system prompt
  is a leak;
- text that may be the start of either (the tail matches the canary's beginning, or
  ends in ``RUN_HOLD`` or more system-prompt words in a row) is held back until the
  next chunk decides, so a leak is cut before it is shown, not after.

On a leak the turn stops generating and the whole reply is replaced by a refusal.
"""

from __future__ import annotations

import re

RUN_LEAK = 10
RUN_HOLD = 4
_TOKEN = re.compile(r"[a-z0-9]+|[\u4e00-\u9fff]")
_ALNUM = re.compile(r"[^a-z0-9]")

REFUSAL = {
    "en": "Sorry, I can't share that. How else can I help with your order or our products?",
    "zh": "抱歉，这个我不能透露。关于订单或商品，还有什么可以帮您？",
}


def _tokens(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(text.lower())]


class LeakGuard:
    def __init__(self, *, system_prompt: str, canary: str) -> None:
        words = [t for t, _s, _e in _tokens(system_prompt)]
        # Every contiguous run of the system prompt up to RUN_LEAK words.
        self._runs: set[tuple[str, ...]] = set()
        for i in range(len(words)):
            for n in range(1, RUN_LEAK + 1):
                if i + n <= len(words):
                    self._runs.add(tuple(words[i : i + n]))
        self.canary = canary
        self._canary_norm = _ALNUM.sub("", canary.lower())
        self.text = ""
        self.released = 0
        self.leaked = False
        self.reason = ""

    def _run_at_end(self, toks: list[tuple[str, int, int]]) -> int:
        """Length of the longest suffix of ``toks`` that is a run of the system prompt."""
        best = 0
        for n in range(1, min(RUN_LEAK, len(toks)) + 1):
            if tuple(t for t, _s, _e in toks[-n:]) in self._runs:
                best = n
            else:
                break
        return best

    def _check(self) -> None:
        if self._canary_norm and self._canary_norm in _ALNUM.sub("", self.text.lower()):
            self.leaked, self.reason = True, "canary"
            return
        toks = _tokens(self.text)
        for end in range(RUN_LEAK, len(toks) + 1):
            if tuple(t for t, _s, _e in toks[end - RUN_LEAK : end]) in self._runs:
                self.leaked, self.reason = True, "system_prompt"
                return

    def feed(self, text: str) -> str | None:
        """Text safe to show now ("" while held back), or None: a leak, stop."""
        if self.leaked:
            return None
        self.text += text
        self._check()
        if self.leaked:
            return None
        hold_from = len(self.text)
        toks = _tokens(self.text)
        run = self._run_at_end(toks)
        if run >= RUN_HOLD:
            hold_from = toks[-run][1]
        lowered = self.text.lower()
        canary = self.canary.lower()
        for n in range(min(len(canary), len(lowered)), 1, -1):
            if lowered.endswith(canary[:n]):
                hold_from = min(hold_from, len(self.text) - n)
                break
        hold_from = max(hold_from, self.released)
        out = self.text[self.released : hold_from]
        self.released = hold_from
        return out

    def finish(self) -> str | None:
        """The held-back tail at the end of the stream, or None if it was a leak."""
        if self.leaked:
            return None
        out = self.text[self.released :]
        self.released = len(self.text)
        return out
