"""The content terms of a sentence or a question, as the entailment check
(knowledge.entail) and the question-coverage check (knowledge.coverage) compare them.

English words are stemmed (``ktext.index_tokens``) and mapped to the one stem a claim
is compared as (``lexicon.claim_stem``: "buy" is "purchas"); Chinese is compared by
its content characters. Chinese numerals become digits, and negation cues are left
out: the polarity check judges them, they are no words a passage must repeat.
"""

from __future__ import annotations

import re

from . import lexicon, numerals
from . import text as ktext
from .grounding import COURTESY

NEG_EN = re.compile(
    r"\b(not|no|never|none|nothing|nobody|no one|nor|neither|without|cannot|can't|won't|"
    r"don't|doesn't|didn't|isn't|aren't|wasn't|weren't|shouldn't|mustn't|couldn't|wouldn't|haven't|"
    r"hasn't|n't|non-refundable|nonrefundable)\b",
    re.IGNORECASE,
)
NEG_ZH = re.compile(r"不|没|無|无|禁止|切勿|勿|未|非|别|莫")
# Chinese words that contain a negation character but say no "not".
ZH_NOT_NEG = re.compile(r"不同|不少|不错|不过(?!期)|不仅|无论|非常|并非常|不管|未来|没关系")
# The grounding check's courtesy words, and a few more that thank or ask politely.
COURTESY_TERMS = COURTESY | frozenset(["help", "note", "thank", "pleas", "谢谢", "请"])
# Units and number words: the number check compares them ("three years" = "36 months").
QUANTITY_WORDS = frozenset(w for w in numerals.WORD_NUMBERS if " " not in w)


def un_words(text: str) -> set[str]:
    """Stems of English words negated by a prefix: "unworn" -> "worn"."""
    out: set[str] = set()
    for word in re.findall(r"\b(?:un|non-?)([a-z]{3,})\b", text.lower()):
        out.update(ktext.index_tokens(word))
    return out


def normalise(text: str) -> str:
    """Chinese numerals as digits and negation cues removed: the cues are judged by
    the polarity check, not counted as words a passage must repeat."""
    text = numerals.zh_numerals_as_arabic(text)
    text = NEG_EN.sub(" ", text)
    return re.sub(r"永不|从不|不|没有|没|无|禁止|切勿|勿|未", " ", ZH_NOT_NEG.sub(" ", text))


def zh_chars(text: str) -> set[str]:
    """The Chinese content characters (particles, pronouns and "can" left out)."""
    return {
        ch
        for ch in normalise(text)
        if "\u4e00" <= ch <= "\u9fff" and ch not in ktext.ZH_FILLER_CHARS
    }


def tokens(text: str) -> set[str]:
    """Content stems; a prefix-negated word also yields its base ("unworn" -> "worn")
    so the clause about unworn items aligns with a claim about worn ones, and the
    polarity check then sees the flip."""
    out = {lexicon.claim_stem(t) for t in ktext.index_tokens(normalise(text))}
    return out | un_words(text)


def content_terms(text: str) -> list[str]:
    """``tokens`` less courtesy, bare numbers, number words and the units of the
    text's quantities."""
    # A unit next to a number ("3 days") is judged by the number check, so "three
    # years" can back "36 months"; a unit on its own ("$99 a year") stays a word.
    units = {q.unit for q in numerals.quantities(text) if q.unit}
    skip = {u for u in units if u in numerals.DAYS} | {"busi", "work"} if units else set()
    return [
        t
        for t in tokens(text)
        if t not in COURTESY_TERMS and not t.isdigit() and t not in QUANTITY_WORDS and t not in skip
    ]
