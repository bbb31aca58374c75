"""The order-id recogniser, built from the shop's configured forms (shop/specs.py).

A form with letters in its prefix (``#W{7}``, ``SO-{4-8}``) is found wherever the
letters stand next to the right number of digits, the ``#`` optional and spaces
tolerated: for ``SO-{5}``, "SO-12345", "so-12345", "# SO 12345". A form of digits only is
ambiguous in free text (an amount, a phone number, a date, a postcode, a quantity),
so it counts only where the shopper marks it as an order id: written with the form's
``#`` ("#1001"), or after an order word ("order 12345", "order no. 12345",
"订单号12345"). Only a long form (``MIN_BARE_DIGITS`` digits or more, ``{9}``) is also
found bare ("000000123"), never next to a currency sign, a phone word, or a digit
group of a date, a decimal or a phone number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .specs import OrderIdSpec

# Fewer digits than this collide with years, postcodes, quantities and amounts.
MIN_BARE_DIGITS = 8
_CUE = (
    r"(?:\border(?:\s*(?:id|no\.?|number|num|nr\.?))?|订单(?:号|编号)?|单号|订单号码)"
    r"\s*(?:is\s+)?[:：#]?\s*"
)
_NOT_BEFORE = r"(?<![A-Za-z0-9$€£¥&.,:/+\-])"
_NOT_AFTER = r"(?!\d)(?![.,:/\-]\d)(?!\s?%)"
_PHONE_WORDS = re.compile(
    r"(?:phone|tel\b|call|mobile|cell|fax|whatsapp|电话|手机|致电)[^.?!。？！]{0,16}$", re.I
)
_MONEY_AFTER = re.compile(r"^\s?(?:dollars?|usd|eur|gbp|cny|rmb|bucks|元|块|美元)", re.I)


@dataclass(frozen=True)
class _Form:
    spec: OrderIdSpec
    in_text: re.Pattern[str]
    whole: re.Pattern[str]
    bare: bool


def _letters(spec: OrderIdSpec) -> str:
    return r"\s?".join(re.escape(c) for c in spec.letters)


def _form(spec: OrderIdSpec) -> _Form:
    digits = rf"(?P<d>\d{{{spec.low},{spec.high}}})"
    hash_mark = r"(?:#\s?)?" if spec.prefix.startswith("#") or spec.letters else ""
    if spec.letters:
        in_text = rf"(?<![A-Za-z0-9]){hash_mark}{_letters(spec)}\s?{digits}(?!\d)"
        whole = rf"{hash_mark}{_letters(spec)}\s*{digits}"
        return _Form(spec, re.compile(in_text, re.I), re.compile(whole, re.I), bare=False)
    marks = [rf"{_CUE}{digits}"]
    if spec.prefix.startswith("#"):
        marks.append(rf"(?<![A-Za-z0-9&])#\s?{digits}")
    bare = spec.low >= MIN_BARE_DIGITS
    if bare:
        marks.append(rf"{_NOT_BEFORE}{digits}")
    # A group name may appear once in a pattern: the digits are read from the match.
    in_text = "|".join(f"(?:{m}{_NOT_AFTER})" for m in marks).replace("(?P<d>", "(?:")
    return _Form(
        spec,
        re.compile(in_text, re.I),
        re.compile(rf"#?\s*{digits}"),
        bare=bare,
    )


_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True)
class OrderIdRecogniser:
    forms: tuple[_Form, ...]

    def normalize(self, raw: str) -> str | None:
        """The canonical id (the form's prefix and the digits) of a string that is
        only an order id, or None."""
        text = raw.strip()
        for form in self.forms:
            match = form.whole.fullmatch(text)
            if match:
                return form.spec.prefix + match["d"]
        return None

    def find_all(self, text: str) -> list[str]:
        """Every order id in free text, canonical, in the order they appear. A message
        that is only an id (the answer to "which order?") is that id in any form."""
        ids: list[str] = []
        for _start, _stop, canonical in self._spans(text):
            if canonical not in ids:
                ids.append(canonical)
        return ids

    def blank(self, text: str) -> str:
        """The text with every order id in it replaced by a space: its digits are not
        a number the shopper chose ("1 from #1004" picks the first)."""
        for start, stop, _canonical in reversed(self._spans(text)):
            text = text[:start] + " " + text[stop:]
        return text

    def _spans(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, canonical id) of each id in the text, left to right."""
        whole = self.normalize(text)
        if whole:
            return [(0, len(text), whole)]
        found: list[tuple[int, int, int, str]] = []
        for rank, form in enumerate(self.forms):
            for match in form.in_text.finditer(text):
                if not form.spec.letters and not _plausible(text, match):
                    continue
                digits = _DIGITS.findall(match.group(0))[-1]
                found.append((match.start(), rank, match.end(), form.spec.prefix + digits))
        spans: list[tuple[int, int, str]] = []
        end = -1
        for start, _rank, stop, canonical in sorted(found):
            if start < end:
                continue  # inside an id already taken (two forms read the same digits)
            end = stop
            spans.append((start, stop, canonical))
        return spans

    def find(self, text: str) -> str | None:
        ids = self.find_all(text)
        return ids[0] if ids else None

    def example(self) -> str:
        """An id in the first form, for "it looks like ..." hints."""
        return self.forms[0].spec.example()


def _plausible(text: str, match: re.Match[str]) -> bool:
    """A digits-only id is not an amount or a phone number."""
    before = text[: match.start()]
    if re.search(r"[$€£¥]\s?$", before) or _PHONE_WORDS.search(before):
        return False
    return not _MONEY_AFTER.match(text[match.end() :])


@lru_cache(maxsize=16)
def order_id_recogniser(specs: tuple[OrderIdSpec, ...]) -> OrderIdRecogniser:
    return OrderIdRecogniser(forms=tuple(_form(spec) for spec in specs))
