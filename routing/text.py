"""Text handling shared by the rules, the slot extractor and the classifier, so the
classifier trains on exactly what it will see at routing time."""

from __future__ import annotations

import re
import unicodedata

_SPACE_RE = re.compile(r"\s+")
# CJK Unified Ideographs, Extension A and the compatibility block: what Chinese
# shoppers type. Kana/Hangul are not routed languages.
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_RE = re.compile(f"[{_CJK}]")
_LATIN_WORD_RE = re.compile(r"[^\W\d_]+", re.ASCII)
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


def language_detect(text: str) -> str:
    """ "zh" when Chinese characters outnumber the latin words.

    One Chinese character carries about as much as one English word, so characters
    are weighed against latin *words*, not letters: "我的order到哪了" is Chinese,
    "cancel 订单 please" is English.
    """
    cjk = len(_CJK_RE.findall(text))
    if not cjk:
        return "en"
    latin_words = len(_LATIN_WORD_RE.findall(text))
    return "zh" if cjk > latin_words else "en"
