"""Prompt sanitization: drop what a model should never see (docs/product.md, prompt hygiene).

Kept: letters and digits of any script (so CJK stays), punctuation, currency and math
signs, ordinary whitespace. Dropped: control and format characters (including the
zero-width and bidi overrides used to smuggle instructions), private-use and
unassigned code points, emoji and other pictographic symbols.
"""

from __future__ import annotations

import re
import unicodedata

_DROP_CATEGORIES = {"Cc", "Cf", "Co", "Cn", "Cs", "So", "Sk"}
_KEEP_CONTROL = {"\n", "\t"}
_SPACES = re.compile(r"[ \t\u00a0\u3000]+")
_NEWLINES = re.compile(r"\n{3,}")


def prompt_sanitize(text: str) -> str:
    kept = []
    for ch in unicodedata.normalize("NFKC", text):
        if ch in _KEEP_CONTROL:
            kept.append(ch)
        elif unicodedata.category(ch) in _DROP_CATEGORIES:
            continue
        else:
            kept.append(ch)
    cleaned = _SPACES.sub(" ", "".join(kept))
    return _NEWLINES.sub("\n\n", cleaned).strip()
