"""The two small languages of the shop profile, parsed once with clear errors.

An order-id form is a literal prefix and a digit count: ``#W{7}`` (a ``#W`` and seven
digits), ``#{3-6}`` (a ``#`` and three to six digits), ``{9}`` (nine digits, leading
zeros kept). A postcode format is one of the names in ``POSTCODE_FORMATS``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_DIGITS = 20
_SPEC_RE = re.compile(r"^(?P<prefix>[^{}\d\s]*)\{(?P<low>\d+)(?:-(?P<high>\d+))?\}$")


class SpecError(ValueError):
    """A spec that cannot be used; the message says what is wrong and how to write it."""


@dataclass(frozen=True)
class OrderIdSpec:
    """One order-id form: ``prefix`` then ``low`` to ``high`` digits."""

    prefix: str
    low: int
    high: int

    @property
    def letters(self) -> str:
        """The prefix without its ``#``: the part a shopper cannot leave out."""
        return self.prefix.replace("#", "")

    def __str__(self) -> str:
        count = str(self.low) if self.low == self.high else f"{self.low}-{self.high}"
        return f"{self.prefix}{{{count}}}"

    def example(self) -> str:
        return self.prefix + "1234567890123456789"[: self.low]


def order_id_spec_parse(text: str) -> OrderIdSpec:
    spec = text.strip()
    match = _SPEC_RE.match(spec)
    if not match:
        raise SpecError(
            f"{spec!r} is not an order-id form: write a prefix and a digit count in braces, "
            "e.g. #W{7}, #{3-6} or {9}."
        )
    low = int(match["low"])
    high = int(match["high"]) if match["high"] else low
    if not 1 <= low <= high <= MAX_DIGITS:
        raise SpecError(
            f"{spec!r}: the digit count must be 1 to {MAX_DIGITS}, the smaller number first."
        )
    prefix = match["prefix"]
    if "#" in prefix[1:]:
        raise SpecError(f"{spec!r}: a # may only start the prefix.")
    if not prefix.replace("#", "").isascii() or not all(
        c.isalpha() or c in "-_" for c in prefix.replace("#", "")
    ):
        raise SpecError(f"{spec!r}: the prefix may hold a leading # and ASCII letters, - or _.")
    return OrderIdSpec(prefix=prefix, low=low, high=high)


def order_id_specs_parse(lines: str | list[str]) -> tuple[OrderIdSpec, ...]:
    """Every non-empty line (or list item) as a spec; at least one."""
    items = lines.splitlines() if isinstance(lines, str) else list(lines)
    specs = tuple(order_id_spec_parse(line) for line in items if line.strip())
    if not specs:
        raise SpecError("Give at least one order-id form, e.g. #W{7}, #{3-6} or {9}.")
    return specs


# A postcode of digits stands alone: not after a currency sign, a "#" or another digit
# group of a number, date or phone number ("$12345", "#12345", "1,23456", "555-12345"),
# and not before one ("12345.00", "12345%", "12345-678").
_NUM_BEFORE = r"(?<![\w$€£¥#/-])(?<!\d[.,])"
_NUM_AFTER = r"(?![\w%/]|[.,]\d|-\d)"


@dataclass(frozen=True)
class PostcodeFormat:
    name: str
    label: str
    # Matches the postcode inside a sentence; group "code" is the postcode.
    pattern: str
    example: str


POSTCODE_FORMATS: dict[str, PostcodeFormat] = {
    "us_zip": PostcodeFormat(
        "us_zip",
        "US ZIP code (12345 or 12345-6789)",
        rf"{_NUM_BEFORE}(?P<code>\d{{5}})(?:-\d{{4}})?{_NUM_AFTER}",
        "10083",
    ),
    "uk_postcode": PostcodeFormat(
        "uk_postcode",
        "UK postcode (SW1A 1AA)",
        r"(?<![A-Za-z0-9])(?P<code>[A-Za-z]{1,2}\d[A-Za-z\d]?\s*\d[A-Za-z]{2})(?![A-Za-z0-9])",
        "SW1A 1AA",
    ),
    "ca_postal_code": PostcodeFormat(
        "ca_postal_code",
        "Canadian postal code (K1A 0B1)",
        r"(?<![A-Za-z0-9])(?P<code>[A-Za-z]\d[A-Za-z]\s?\d[A-Za-z]\d)(?![A-Za-z0-9])",
        "K1A 0B1",
    ),
    "digits_4": PostcodeFormat(
        "digits_4",
        "four digits (AU, NZ, CH, ...)",
        rf"{_NUM_BEFORE}(?P<code>\d{{4}}){_NUM_AFTER}",
        "2000",
    ),
    "digits_6": PostcodeFormat(
        "digits_6",
        "six digits (CN, IN, SG, ...)",
        rf"{_NUM_BEFORE}(?P<code>\d{{6}}){_NUM_AFTER}",
        "100080",
    ),
    "generic": PostcodeFormat(
        "generic",
        "generic: 3 to 10 letters, digits or -, at least one digit, no space",
        rf"{_NUM_BEFORE}(?P<code>(?=[A-Za-z-]*\d)[A-Za-z\d-]{{3,10}}){_NUM_AFTER}",
        "1010",
    ),
}


def postcode_formats_parse(lines: str | list[str]) -> tuple[PostcodeFormat, ...]:
    items = lines.splitlines() if isinstance(lines, str) else list(lines)
    names = [line.strip() for line in items if line.strip()]
    unknown = [n for n in names if n not in POSTCODE_FORMATS]
    if unknown:
        raise SpecError(
            f"Unknown postcode format {', '.join(map(repr, unknown))}: use one of "
            + ", ".join(POSTCODE_FORMATS)
            + "."
        )
    if not names:
        raise SpecError("Give at least one postcode format: " + ", ".join(POSTCODE_FORMATS) + ".")
    return tuple(POSTCODE_FORMATS[n] for n in names)


def postcode_canonical(code: str) -> str:
    """Upper-case with inner whitespace collapsed to one space ("sw1a  1aa" -> "SW1A 1AA")."""
    return " ".join(code.upper().split())
