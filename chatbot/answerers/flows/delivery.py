"""How long delivery takes in general (the shop's shipping times), asked about no order
of the shopper's: told from the shipping options, to the verified shopper's city when
we know it."""

from __future__ import annotations

import re

from routing import types as rt

from ..base import AnswerPlan, TurnContext, say
from ..order_format import delivery_times_text, find_order_id

# A delivery-time question about delivery in general (the shop's shipping times), not
# about one of the shopper's orders: it asks how long delivery takes, usually or to a
# place, and names no order of theirs. Anything else keeps the order's own estimate.
_GENERAL_DELIVERY = re.compile(
    r"\b(?:usually|normally|generally|typically|in general|on average)\b"
    r"|\bhow (?:long|fast|quick(?:ly)?|soon|many (?:business |working )?days)\b.*"
    r"\b(?:deliver\w*|ship\w*|post\w*)\b"
    r"|\b(?:deliver\w*|ship\w*)\b.*\bto (?:[a-z]{3,}|\d{5})"
    r"|一般|通常|平时|(?:送到|寄到|发到|运到|配送到).{0,12}(?:几天|多久|多长时间|几个工作日)"
    r"|(?:配送|送货|快递|发货|邮寄).{0,6}(?:需要|要)?(?:几天|多久|多长时间)",
    re.IGNORECASE,
)
# Words that point at the shopper's own order ("my order", "will it arrive", "我的").
# "it" in "how long does it take" is no order, so it doesn't count.
_OWN_ORDER = re.compile(
    r"\b(?:my|mine|i|me|our|we|us|they|them)\b|\bit\b(?! (?:usually |normally )?takes?\b)"
    r"|我的|我买|我下|单号|它",
    re.IGNORECASE,
)


def is_general_delivery(text: str, slots: dict[str, str]) -> bool:
    """A question about delivery times in general, not about one of the shopper's orders."""
    if slots.get("order_id") or find_order_id(text):
        return False
    return bool(_GENERAL_DELIVERY.search(text)) and not _OWN_ORDER.search(text)


# A destination the shopper names ("to Austin", "to 73301", 寄到北京): then their own
# address is not what they asked about.
_NAMED_PLACE = re.compile(
    r"\bto (?!(?:my|me|us|our|you|your|the|a|an|here|home|it|them)\b)"
    r"([a-z]{3,}(?: [a-z]{3,})?|\d{5})"
    r"|(?:送到|寄到|发到|运到|配送到)(?!我)",
    re.IGNORECASE,
)


def _asks_elsewhere(text: str, city: str) -> bool:
    """The question names a destination other than the shopper's own city."""
    match = _NAMED_PLACE.search(text)
    if match is None:
        return False
    place = (match.group(1) or "").lower()
    return not (place and city.lower().startswith(place.split()[0]))


def delivery_estimate(ctx: TurnContext) -> AnswerPlan | None:
    """How long delivery takes, from the shop's shipping options; to the verified
    shopper's city (their latest order's address) when we know it. No order is looked
    up as the answer, and no identity is needed. None when the order system lists no
    shipping options: the shop's articles answer instead."""
    options = delivery_times_text(ctx)
    if not options:
        return None
    facts = {"options": options}
    key = "estimate"
    if ctx.customer_id:
        orders = ctx.orders().orders_for_customer(customer_id=ctx.customer_id)
        latest = max(orders, key=lambda o: o.placed_on, default=None)
        if (
            latest is not None
            and latest.address.city
            and not _asks_elsewhere(ctx.text, latest.address.city)
        ):
            facts |= {"city": latest.address.city, "state": latest.address.state}
            key = "estimate_city"
    return say(ctx, rt.DELIVERY_TIME, key, facts, personal=key == "estimate_city")
