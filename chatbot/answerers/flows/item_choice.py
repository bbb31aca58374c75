"""Which of a listed set the shopper picked: the order's items to return or exchange (by
number, "all", or name), and the option to swap an item for (by number or by the
option values named)."""

from __future__ import annotations

import re

from chatbot.orders.types import OrderItem
from knowledge.numerals import ordinal

from ..reply_match import Option, reply_pick

_ALL_ITEMS = re.compile(
    r"\b(?:all|both|everything|every item|the whole order|all of them)\b"
    r"|全部|所有|整单|都退|都换|都要|两件都|两个都",
    re.IGNORECASE,
)
_NUMBER = re.compile(
    r"(?<![\d#w])(\d{1,2})(?!\d)|\b(first|second|third|fourth|fifth)\b|第([一二三四五])"
)


def item_options(items: list[OrderItem]) -> list[Option]:
    """The order's items as the "which items?" question lists them."""
    return [Option(key=item.item_id, label=item.name, names=(item.name,)) for item in items]


def items_in_text(text: str, items: list[OrderItem], *, numbers: bool = True) -> list[OrderItem]:
    """The order's items the shopper named: "all", their places in the list ("1 and
    3", "the first one"), or their names ("the puzzle"). ``numbers`` off for a message
    that wasn't answering the list (its digits are not places in it)."""
    if _ALL_ITEMS.search(text):
        return list(items)
    by_id = {item.item_id: item for item in items}
    picked = reply_pick(text, item_options(items), many=True, places=numbers)
    return [by_id[option.key] for option in picked]


def variant_in_text(text: str, variants: list[OrderItem]) -> OrderItem | None:
    """The option the shopper picked: its number in the list ("2", "the second"), or
    the one whose option values the message names most ("size 10, black"), if that is
    a single best. A bare number is the list's; "size 10" is an option, not item 10."""
    numbers = [int(d) if d else ordinal(w or z) or 0 for d, w, z in _NUMBER.findall(text.lower())]
    bare = re.fullmatch(r"\W*(?:no\.?\s*|number\s*|#)?\d{1,2}\W*|\W*第.\W*", text.lower())
    if bare and len(numbers) == 1 and 1 <= numbers[0] <= len(variants):
        return variants[numbers[0] - 1]
    lowered = f" {re.sub(r'[,;.!?，。]', ' ', text.lower())} "
    scores = [
        sum(1 for value in v.options.values() if f" {value.lower()} " in lowered) for v in variants
    ]
    best = max(scores, default=0)
    if best and scores.count(best) == 1:
        return variants[scores.index(best)]
    if len(numbers) == 1 and 1 <= numbers[0] <= len(variants):
        return variants[numbers[0] - 1]
    return None
