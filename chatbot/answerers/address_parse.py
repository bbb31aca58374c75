"""A new shipping address as the shopper types it, in the shop's postcode formats and
country (shop profile): the postcode ends the address, the parts before it are comma
separated, the first is the street, the last the city or town, any between a second
line. Where the postcode format goes with a two-letter state or province (US ZIP,
Canadian postal code) that region stands before the postcode and is required:

- US: "12 Oak St, Apt 4, Austin, TX 73301"
- UK: "221B Baker Street, Flat 2, London, NW1 6XE" or "10 High Street, Leeds LS1 4AB"
- any other format: "Hauptstrasse 5, Berlin, 10115"
"""

from __future__ import annotations

import re

from chatbot.orders.types import Address
from shop.profile import shop_profile
from shop.specs import PostcodeFormat, postcode_canonical

# The formats whose addresses carry a two-letter state or province before the postcode.
_WITH_REGION = frozenset({"us_zip", "ca_postal_code"})
_REGION = re.compile(r"(?:^|[\s,])(?P<region>[A-Za-z]{2})$")

# How the ask and retry replies show the form, by the shop's first postcode format.
_FORMAT_TEXT = {
    "us_zip": {
        "en": "street, city, state ZIP (for example: 12 Main St, Austin, TX 78701)",
        "zh": "街道, 城市, 州 邮编（例如：12 Main St, Austin, TX 78701）",
    },
    "ca_postal_code": {
        "en": "street, city, province postal code (for example: 12 Main St, Ottawa, ON K1A 0B1)",
        "zh": "街道, 城市, 省 邮编（例如：12 Main St, Ottawa, ON K1A 0B1）",
    },
    "uk_postcode": {
        "en": "street, town, postcode (for example: 10 High Street, Leeds, LS1 4AB)",
        "zh": "街道, 城镇, 邮编（例如：10 High Street, Leeds, LS1 4AB）",
    },
}
_GENERIC_TEXT = {
    "en": "street, city, postcode (for example: 10 Main Street, Springfield, {example})",
    "zh": "街道, 城市, 邮编（例如：10 Main Street, Springfield, {example}）",
}


def parse_address(text: str) -> Address | None:
    """The address in ``text`` in one of the shop's postcode formats, or None."""
    profile = shop_profile()
    body = text.strip().rstrip(".。").strip()
    for postcode_format in profile.postcode_formats:
        address = _parse(body, postcode_format, profile.country)
        if address is not None:
            return address
    return None


def address_format_text(language: str) -> str:
    """How to write an address for this shop, with an example, in the reply's language."""
    first = shop_profile().postcode_formats[0]
    lang = language if language in ("en", "zh") else "en"
    if first.name in _FORMAT_TEXT:
        return _FORMAT_TEXT[first.name][lang]
    return _GENERIC_TEXT[lang].format(example=first.example)


def _parse(body: str, postcode_format: PostcodeFormat, country: str) -> Address | None:
    match = re.search(postcode_format.pattern + r"\s*$", body)
    if match is None:
        return None
    head = body[: match.start()].rstrip(" ,")
    region = ""
    if postcode_format.name in _WITH_REGION:
        found = _REGION.search(head)
        if found is None:
            return None
        region = found["region"].upper()
        head = head[: found.start("region")].rstrip(" ,")
    parts = [part.strip() for part in head.split(",")]
    if len(parts) < 2 or not all(parts):
        return None
    return Address(
        address1=parts[0],
        address2=", ".join(parts[1:-1]),
        city=parts[-1],
        state=region,
        zip=postcode_canonical(match["code"]),
        country=country,
    )
