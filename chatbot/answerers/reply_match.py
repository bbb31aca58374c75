"""Which of the options a question offered the shopper's reply picks.

Every flow that asks a question with options (the cancel reasons, which order, which
items, which variant) reads the answer here, before any yes/no reading: "no longer
needed" is the reason the bot suggested, not a "no". An option is picked by

1. its own wording or any other (``Option.pattern``, EN and ZH), or its label;
2. its place in the list: "2", "the first one", "the last one", "第二个";
3. its name: a word of an item or product name ("the tent" for Trail Tent);
4. its date: "the one from May 3", "2024-05-03", "5月3日的".

A reply that picks nothing gets the question asked again with its options as buttons
(``Dialogue``); this module only reads.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date

from knowledge.numerals import ordinal
from routing.order_ids import order_ids


@dataclass(frozen=True)
class Option:
    """One answer a question offers: ``key`` is what the flow acts on (a reason, an
    order id, an item id); ``label`` what its button says."""

    key: str
    label: str
    names: tuple[str, ...] = ()
    pattern: re.Pattern[str] | None = None
    day: date | None = None
    extra: dict[str, str] = field(default_factory=dict, compare=False, hash=False)


_ORDINAL_WORD = re.compile(
    r"\b(first|second|third|fourth|fifth|1st|2nd|3rd|4th|5th)\b"
    r"|第\s*([一二三四五六七八九十\d]{1,3})"
    r"|(?<![\d.,$£€¥/:])(\d{1,2})(?![\d.,/:%]|\s*(?:x\b|pcs|days?|件|天))",
    re.IGNORECASE,
)
_LAST = re.compile(r"\b(?:the\s+)?last(?:\s+one)?\b|最后一[个件单项]?|最后那", re.IGNORECASE)
_SUFFIX_ORDINALS = {"1st": 1, "2nd": 2, "3rd": 3, "4th": 4, "5th": 5}
# Words too common to name an option by ("the one", "my order", "that item").
_STOP_WORDS = (
    "the a an one ones this that these those my our your it them item items order orders "
    "please want would like return exchange cancel and with for from of in on to set pack "
    "pair new black white red blue green small medium large size color colour"
)
_STOP = frozenset(_STOP_WORDS.split())
_WORD = re.compile(r"[a-z][a-z'-]+|[\u4e00-\u9fff]{2,}")
_MONTHS = {
    m: i
    for i, names in enumerate(
        (
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ),
        start=1,
    )
    for m in names
}
_MONTH_RE = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DATE_PATTERNS = (
    (re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b"), "ymd"),
    (re.compile(rf"\b({_MONTH_RE})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b", re.IGNORECASE), "md"),
    (
        re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_RE})\b", re.IGNORECASE),
        "dm",
    ),
    (re.compile(r"(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]?"), "md_zh"),
    (re.compile(r"\b(\d{1,2})/(\d{1,2})\b"), "m/d"),
)


def _stem(word: str) -> str:
    for suffix in ("es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _words(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) >= 3}


def days_in_text(text: str) -> list[tuple[int, int]]:
    """(month, day) of every date the text names."""
    found: list[tuple[int, int]] = []
    for pattern, kind in _DATE_PATTERNS:
        for m in pattern.finditer(text):
            a, b = m.group(1), m.group(2)
            if kind == "ymd":
                month, day = int(b), int(m.group(3))
            elif kind == "md":
                month, day = _MONTHS[a.lower()], int(b)
            elif kind == "dm":
                month, day = _MONTHS[b.lower()], int(a)
            else:
                month, day = int(a), int(b)
            if 1 <= month <= 12 and 1 <= day <= 31:
                found.append((month, day))
    return found


def places_in_text(text: str, count: int) -> list[int]:
    """The 1-based places in a list of ``count`` the text names, in order."""
    # The shop's order ids (its forms: shop profile) carry digits that are not a place.
    cleaned = order_ids().blank(text)
    for pattern, _kind in _DATE_PATTERNS:  # "May 3" is a date, not the third option
        cleaned = pattern.sub(" ", cleaned)
    places: list[int] = []
    for m in _ORDINAL_WORD.finditer(cleaned.lower()):
        word, zh, digits = m.groups()
        if word:
            n = _SUFFIX_ORDINALS.get(word) or ordinal(word) or 0
        elif zh:
            n = int(zh) if zh.isdigit() else ordinal(zh) or 0
        else:
            n = int(digits)
        if 1 <= n <= count and n not in places:
            places.append(n)
    if _LAST.search(cleaned) and count and count not in places:
        places.append(count)
    return places


def reply_pick(
    text: str, options: Sequence[Option], *, many: bool = False, places: bool = True
) -> list[Option]:
    """The options ``text`` picks (at most one unless ``many``), in the order named;
    [] when it picks none, or more than one where one is asked for."""
    if not text.strip() or not options:
        return []
    for find in (_by_wording, _by_place if places else None, _by_name, _by_date):
        if find is None:
            continue
        picked = find(text, options)
        if picked and (many or len(picked) == 1):
            return picked
    return []


def _contains(text: str, phrase: str) -> bool:
    """``phrase`` in ``text`` as whole words ("hat" is not in "what"); Chinese as is."""
    phrase = phrase.lower().strip()
    if not phrase:
        return False
    return re.search(rf"(?<![a-z0-9]){re.escape(phrase)}(?![a-z0-9])", text.lower()) is not None


def _by_wording(text: str, options: Sequence[Option]) -> list[Option]:
    return [
        option
        for option in options
        if _contains(text, option.label) or (option.pattern and option.pattern.search(text))
    ]


def _by_place(text: str, options: Sequence[Option]) -> list[Option]:
    return [options[n - 1] for n in places_in_text(text, len(options))]


def _by_name(text: str, options: Sequence[Option]) -> list[Option]:
    said = _words(text)
    picked = []
    for option in options:
        for name in option.names:
            # Chinese names are matched whole; English ones by any of their words.
            if _contains(text, name) or (said & _words(name)):
                picked.append(option)
                break
    return picked


def _by_date(text: str, options: Sequence[Option]) -> list[Option]:
    days = set(days_in_text(text))
    if not days:
        return []
    return [o for o in options if o.day is not None and (o.day.month, o.day.day) in days]
