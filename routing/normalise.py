"""Text handling shared by the rules, the slot extractor and the classifier, so the
classifier trains on exactly what it will see at routing time."""

from __future__ import annotations

import re
import unicodedata

_SPACE_RE = re.compile(r"\s+")
# CJK Unified Ideographs, Extension A and the compatibility block: what Chinese
# shoppers type. Kana/Hangul are not routed languages.
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# A token is a latin word/number (with an inner apostrophe: "hasn't") or a single
# Chinese character. Counting characters avoids a segmenter on the hot path, and a
# keyword then covers as many tokens as it has characters, so densities in both
# languages are comparable.
_TOKEN_RE = re.compile(rf"[a-z0-9]+(?:'[a-z]+)?|[{_CJK}]")


def text_normalise(text: str) -> str:
    """NFKC (full-width "？＃Ｗ" become "?#W"), case-folded, whitespace collapsed."""
    return _SPACE_RE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def text_tokens(normalised: str) -> list[str]:
    return _TOKEN_RE.findall(normalised)
