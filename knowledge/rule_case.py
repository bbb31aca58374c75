"""Which sentences of the shop's rules belong in front of an order answer.

An order flow quotes a rule only when it answers the shopper: the sentence is about
what the message asks beyond the order intent's own topic (``message_subject``,
``about``), and the case it is stated for (members of a level, orders to another
country or within the shop's country, a named place) is the shopper's case
(``ShopperCase``, ``fits``). A sentence whose case the bot cannot tell for this
shopper is left out: a guest told the gold members' window, or a shopper at home told
the time for parcels abroad, is told something that isn't theirs.

What counts as the intent's own topic is the router's data (the intent's example
utterances, ``routing.intent_topics``), the membership levels are the shop profile's,
and their names in Chinese are the shop's synonym sets; only the words for "another
country", "the home country" and "member" are language rules here. Blocking (jieba,
spaCy, the shop words' tables).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from . import lexicon, named_case, numerals, shop_words
from . import text as ktext
from .coverage import QUESTION_FILLER
from .terms import COURTESY_TERMS

# A rule stated for orders that leave the shop's country, and one for orders within it.
_ABROAD = re.compile(
    r"\b(?:international(?:ly)?|abroad|overseas|worldwide|cross-border|foreign|"
    r"(?:other|another|any other) countr(?:y|ies)|outside (?:the|our) country)\b"
    r"|国际|海外|境外|国外|其他国家|其它国家|跨境",
    re.IGNORECASE,
)
_DOMESTIC = re.compile(
    r"\b(?:domestic(?:ally)?|nationwide|within (?:the|our) country|in (?:the|our) country)\b"
    r"|国内|境内|全国",
    re.IGNORECASE,
)
# A rule stated for members (of some level the sentence may name).
_MEMBER = re.compile(r"\bmembers?(?:hip)?\b|会员", re.IGNORECASE)
# A duration and a sum of money: a message naming one asks about the rule's limit.
DURATION, MONEY = "duration", "money"


@dataclass(frozen=True)
class ShopperCase:
    """What the bot knows of the shopper's case: their membership level ("" when
    unknown), whether their order leaves the shop's country (None when unknown), and
    the places the message names."""

    membership: str = ""
    abroad: bool | None = None
    places: tuple[str, ...] = ()


@dataclass(frozen=True)
class Subject:
    """What a message asks about beyond its intent's topic: content words (English
    stems, Chinese words) and the kinds of quantity it names."""

    terms: frozenset[str] = frozenset()
    kinds: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.terms or self.kinds)


@dataclass(frozen=True)
class Condition:
    """The case a sentence is stated for."""

    levels: frozenset[str] = frozenset()  # membership levels it names
    members: bool = False  # stated for members (of a level it may not name)
    abroad: bool | None = None  # True: other countries; False: the home country
    places: tuple[str, ...] = ()


def message_terms(text: str) -> frozenset[str]:
    """Content words: English by stem, Chinese words as jieba cuts them; courtesy,
    question filler, goods in general ("my stuff" asks about no rule) and anything with
    a digit (order ids, quantities) left out."""
    out: set[str] = set()
    for word in ktext.content_words(text):
        if (
            word in QUESTION_FILLER
            or word in ktext.GENERIC_NOUNS
            or any(ch.isdigit() for ch in word)
        ):
            continue
        term = word if ktext.has_cjk(word) else shop_words.stem(word)
        if term and term not in COURTESY_TERMS:
            out.add(term)
    return frozenset(out)


def quantity_kinds(text: str) -> frozenset[str]:
    kinds = set()
    if any(q.unit in numerals.DAYS for q in numerals.quantities(text)):
        kinds.add(DURATION)
    if named_case.amounts_in(text):
        kinds.add(MONEY)
    return frozenset(kinds)


def message_subject(text: str, topic: Iterable[str]) -> Subject:
    """What ``text`` asks about beyond ``topic`` (the order intent's own words): empty
    for a plain status or action request."""
    return Subject(terms=message_terms(text) - frozenset(topic), kinds=quantity_kinds(text))


def about(sentence: str, subject: Subject) -> bool:
    """The sentence states something the message asks about: one of its subject
    words (or the shop's other words for it), or a quantity of the kind it names."""
    if subject.kinds & quantity_kinds(sentence):
        return True
    stems = set(ktext.index_tokens(sentence))
    for term in subject.terms:
        if ktext.has_cjk(term):
            if term in sentence or ktext.zh_chars_found(term, sentence):
                return True
            if any(alt in sentence for alt in lexicon.alternatives(term, goods_in_general=False)):
                return True
        elif term in stems or lexicon.alternatives(term, goods_in_general=False) & stems:
            return True
    return False


def level_names(level: str) -> frozenset[str]:
    """How the articles name a membership level: the level itself and the Chinese
    terms the shop's synonym sets give it (a set "金卡, gold")."""
    return frozenset({level.casefold()}) | lexicon.alternatives_in(level.casefold(), zh=True)


def levels_named(text: str, levels: Iterable[str]) -> frozenset[str]:
    """The membership levels ``text`` names (by the level's word or its Chinese name)."""
    lowered = text.casefold()
    named = set()
    for level in levels:
        for name in level_names(level):
            if ktext.has_cjk(name):
                if name in text:
                    named.add(level)
            elif re.search(rf"\b{re.escape(name)}s?\b", lowered):
                named.add(level)
    return frozenset(named)


def condition(sentence: str, *, levels: Iterable[str], home: str) -> Condition:
    """The case ``sentence`` is stated for. ``home``: the shop's country (ISO code); a
    sentence naming it is a rule for orders within it."""
    named = named_case.places_in(sentence)
    places = tuple(p for p in named if not same_country(p, home))
    home_named = len(places) < len(named)
    abroad: bool | None = None
    if _ABROAD.search(sentence):
        abroad = True
    elif _DOMESTIC.search(sentence) or home_named:
        abroad = False
    return Condition(
        levels=levels_named(sentence, levels),
        members=bool(_MEMBER.search(sentence)),
        abroad=abroad,
        places=places,
    )


def fits(cond: Condition, case: ShopperCase) -> bool:
    """The sentence's case is the shopper's, as far as the bot knows it: a sentence for
    some members, for orders abroad or at home, or for a place is left out unless the
    shopper's level, destination or named place is known and the same."""
    if (cond.levels or cond.members) and case.membership not in cond.levels:
        return False
    if cond.abroad is not None and case.abroad is not cond.abroad:
        return False
    return not cond.places or any(
        named_case.same_place(p, q) for p in cond.places for q in case.places
    )


def rule_for_case(
    text: str, subject: Subject, case: ShopperCase, *, levels: Iterable[str], home: str
) -> str:
    """The sentences of ``text`` (a card's answer or an article's extract) that are
    about the message's subject and fit the shopper's case, in their order; "" when
    none is."""
    levels = tuple(levels)
    kept = [
        s
        for s in ktext.sentences(text)
        if about(s, subject) and fits(condition(s, levels=levels, home=home), case)
    ]
    joiner = "" if ktext.has_cjk(text) else " "
    return joiner.join(kept)


def same_country(place: str, home: str) -> bool:
    """``place`` names the shop's country by its code: "US", "U.S." or "USA" for US (the
    order system writes three-letter codes, the shop profile two)."""
    key = re.sub(r"[^A-Za-z]", "", place).upper()
    code = home.upper()
    return bool(code) and (key == code or (len(key) == 3 and key.startswith(code)))


def abroad_of(country: str, home: str) -> bool | None:
    """Whether an order to ``country`` (as the order system writes it) leaves the shop's
    country: None when the codes can't be compared (a name, another form)."""
    key = re.sub(r"[^A-Za-z]", "", country).upper()
    if not key or not home:
        return None
    if same_country(key, home):
        return False
    return True if len(key) == len(home) else None
