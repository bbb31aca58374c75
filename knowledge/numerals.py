"""Numbers in shop text: Chinese numerals, English number words, and quantities with
their unit (a duration is compared in days, so "three years" backs "36 months").

The one reader of figures for the entailment and question-coverage checks
(``quantities``), for retrieval's keyword share (``zh_digits_as_arabic``) and for an
order flow's choice from a list ("the second one", 第二个: ``ordinal``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# English number words (and "a single", "half") a rule or a shopper writes a figure with.
WORD_NUMBERS = {
    "zero": 0,
    "one": 1,
    "a single": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "fourteen": 14,
    "fifteen": 15,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "ninety": 90,
    "hundred": 100,
    "half": 0.5,
}
# Chinese digits; 十, 百 and 千 multiply the digit before them (``zh_number``).
ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7}
ZH_DIGITS |= {"八": 8, "九": 9}
ZH_NUMERAL = re.compile(r"[零一二两三四五六七八九十百千]+")
# Each Chinese digit as its Arabic digit, 十/百/千 left as they are ("两年" -> "2年").
_DIGIT_BY_DIGIT = str.maketrans({ch: str(value) for ch, value in ZH_DIGITS.items()})
# English ordinals a shopper picks an item of a list with ("the second one").
ORDINALS_EN = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5}
_NUM = re.compile(
    r"(?P<num>\d+(?:[.,]\d+)*|\b(?:"
    + "|".join(sorted(WORD_NUMBERS, key=len, reverse=True))
    # Whole words only: "often" and "someone" hold no figure.
    + r")\b)(?:\s*(?:-|–|to|至|到)\s*(?P<hi>\d+(?:[.,]\d+)*))?"
    r"\s*(?P<unit>business days?|working days?|days?|weeks?|months?|years?|hours?|"
    r"个工作日|工作日|天|日|周|星期|个月|月|年|小时|%|percent|张|件|次|袋|双|条|美元|元)?",
    re.IGNORECASE,
)
# A unit's length in days: durations are compared in days.
DAYS = {"day": 1.0, "week": 7.0, "month": 30.44, "year": 365.25, "hour": 1 / 24}


def zh_number(token: str) -> float | None:
    """A Chinese numeral's value ("三十六" -> 36.0), None for a token that is not one."""
    if token in ZH_DIGITS:
        return float(ZH_DIGITS[token])
    total, current = 0, 0
    for ch in token:
        if ch in ZH_DIGITS:
            current = ZH_DIGITS[ch]
        elif ch == "十":
            total += (current or 1) * 10
            current = 0
        elif ch == "百":
            total += (current or 1) * 100
            current = 0
        elif ch == "千":
            total += (current or 1) * 1000
            current = 0
        else:
            return None
    return float(total + current)


def zh_to_arabic(token: str) -> str:
    """A Chinese numeral in Arabic digits ("三十六" -> "36"); any other token unchanged."""
    value = zh_number(token)
    if value is None:
        return token
    return f"{int(value)}" if value == int(value) else str(value)


def zh_numerals_as_arabic(text: str) -> str:
    """Every Chinese numeral of ``text`` in Arabic digits ("三十六个月" -> "36个月")."""
    return ZH_NUMERAL.sub(lambda m: zh_to_arabic(m.group(0)), text)


def zh_digits_as_arabic(text: str) -> str:
    """Each Chinese digit as its Arabic digit, one character at a time, without reading
    十, 百 or 千: "两年" -> "2年", "十五天" -> "十5天". For looking up a shopper's short
    quantity ("两年", "一天") in a passage that writes it in digits; ``zh_numerals_as_arabic``
    reads whole numerals."""
    return text.translate(_DIGIT_BY_DIGIT)


def ordinal(word: str) -> int | None:
    """The position a word names in a list: "second" -> 2, and a Chinese numeral as in
    第二 -> 2. None for any other word."""
    if word in ORDINALS_EN:
        return ORDINALS_EN[word]
    value = zh_number(word)
    return int(value) if value is not None and value == int(value) else None


def _unit(raw: str | None) -> str:
    if not raw:
        return ""
    raw = raw.lower()
    for key, zh in (
        ("day", ("天", "日", "工作日")),
        ("week", ("周", "星期")),
        ("month", ("月",)),
        ("year", ("年",)),
        ("hour", ("小时",)),
    ):
        if key in raw or any(z in raw for z in zh):
            return key
    if raw in ("%", "percent"):
        return "%"
    # Chinese measure words and currency: "5张" (vouchers) is not "5美元" (dollars).
    return raw if raw in ("张", "件", "次", "袋", "双", "条", "美元", "元") else ""


@dataclass(frozen=True)
class Quantity:
    value: float
    unit: str  # day|week|month|year|hour|%|"" (a bare number, a price, an id)

    def days(self) -> float | None:
        return self.value * DAYS[self.unit] if self.unit in DAYS else None

    def same(self, other: Quantity) -> bool:
        a, b = self.days(), other.days()
        if a is not None and b is not None:
            return abs(a - b) <= 0.03 * max(a, b)
        return self.value == other.value


def quantities(text: str) -> list[Quantity]:
    """Numbers with their unit, from digits, English number words and Chinese numerals.
    A range ("3-7 days") yields both ends."""
    text = zh_numerals_as_arabic(text)
    out: list[Quantity] = []
    for m in _NUM.finditer(text):
        raw = m.group("num").lower()
        if raw in WORD_NUMBERS:
            value = float(WORD_NUMBERS[raw])
        else:
            try:
                value = float(raw.replace(",", ""))
            except ValueError:
                continue
        unit = _unit(m.group("unit"))
        out.append(Quantity(value, unit))
        if m.group("hi"):
            out.append(Quantity(float(m.group("hi").replace(",", "")), unit))
    return out
