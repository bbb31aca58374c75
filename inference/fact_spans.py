"""The spans of a text that carry facts, found without a parser.

Ids, numbers, amounts, dates, e-mails and carrier names: prompt compression
(``inference.compress``) copies them verbatim whatever the parse says, so a
compressed prompt never loses or garbles a fact.
"""

from __future__ import annotations

import re

CARRIERS = (
    "SF Express",
    "FedEx",
    "USPS",
    "UPS",
    "DHL",
    "EMS",
    "顺丰",
    "圆通",
    "中通",
    "申通",
    "韵达",
)
_MONTHS = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.?"
_PROTECT_RE = re.compile(
    "|".join(
        [
            # e-mail
            r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}",
            # dates: "Oct 7, 2026", "7 Oct 2026", "2026-10-07", "10/7/2026", "2026年10月7日"
            rf"{_MONTHS}\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?",
            rf"\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTHS}(?:,?\s+\d{{4}})?",
            r"\d{4}-\d{1,2}-\d{1,2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?",
            r"(?:\d{4}年)?\d{1,2}月\d{1,2}[日号]|\d{4}年",
            # amounts and ranges: "$5.99", "4-6", "¥12", "50%"
            r"[$€£¥]\s?\d[\d,]*(?:\.\d+)?|\d+(?:\.\d+)?\s?[-–~]\s?\d+(?:\.\d+)?|\d+(?:\.\d+)?%",
            # ids and anything else with a digit: "#1001", "SF123456789", "1Z999", "3"
            r"#?[A-Za-z]*\d[A-Za-z0-9]*(?:[.,:/-]\d[A-Za-z0-9]*)*",
            "|".join(re.escape(c) for c in CARRIERS),
        ]
    ),
    re.IGNORECASE,
)


def protected_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every fact-bearing span found without a parser."""
    return [m.span() for m in _PROTECT_RE.finditer(text) if m.group(0).strip()]


def merge_spans(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The spans sorted, with overlapping or touching ones joined."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged
