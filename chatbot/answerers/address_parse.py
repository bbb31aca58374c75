"""A new shipping address as the shopper types it: "12 Oak St, Apt 4, Austin, TX 73301"
(street, an optional second line, city, two-letter state, five-digit zip)."""

from __future__ import annotations

import re

from chatbot.orders.types import Address

_ADDRESS = re.compile(
    r"^(?P<a1>[^,]+?),\s*(?:(?P<a2>[^,]+?),\s*)?(?P<city>[^,]+?),\s*(?P<state>[A-Za-z]{2})\s+(?P<zip>\d{5})\s*\.?$"
)


def parse_address(text: str) -> Address | None:
    match = _ADDRESS.match(text.strip())
    if not match:
        return None
    return Address(
        address1=match["a1"].strip(),
        address2=(match["a2"] or "").strip(),
        city=match["city"].strip(),
        state=match["state"].upper(),
        zip=match["zip"],
    )
