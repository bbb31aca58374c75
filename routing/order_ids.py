"""Order ids: the one parser, shared by the router's slots, the dialogue, every order
backend and the reference API."""

from __future__ import annotations

import re

# Shoppers type "#W2611340", "W2611340", "w2611340" or "# W 2611340"; the shop
# stores "#W2611340". The digit count is loose on purpose: a shop's own ids may be
# longer than the demo's seven digits.
_ORDER_ID_RE = re.compile(r"^#?\s*[Ww]\s*(\d{4,12})$")


def order_id_normalize(raw: str) -> str | None:
    """The canonical "#W<digits>" form, or None if ``raw`` cannot be an order id.

    None is handled like an unknown order by callers, so a garbled id never reaches
    a database query or a URL.
    """
    match = _ORDER_ID_RE.match(raw.strip())
    return f"#W{match.group(1)}" if match else None


# The same id inside a sentence ("where is #W2611340?", "订单W2611340"): no letter or
# digit glued to either side, so "AW123456" or a phone number never matches.
_ORDER_ID_IN_TEXT_RE = re.compile(r"(?<![A-Za-z0-9])#?\s*[Ww]\s*(\d{4,12})(?!\d)")


def order_id_find(text: str) -> str | None:
    """The first order id in free text, canonical, or None."""
    match = _ORDER_ID_IN_TEXT_RE.search(text)
    return f"#W{match.group(1)}" if match else None


def order_id_for_url(order_id: str) -> str:
    """The id as a path segment: "#" would start a URL fragment, so it is dropped."""
    return order_id.lstrip("#")
