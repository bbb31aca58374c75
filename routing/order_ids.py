"""Order ids: the one parser, shared by the router's slots, the dialogue, every order
backend and the reference API. The forms are the shop's (shop profile,
``order_id_formats``); shop/order_ids.py builds the recogniser from them."""

from __future__ import annotations

from shop.order_ids import OrderIdRecogniser, order_id_recogniser
from shop.profile import shop_profile


def order_ids() -> OrderIdRecogniser:
    """The recogniser for the shop's configured forms (rebuilt only when they change)."""
    return order_id_recogniser(shop_profile().order_id_specs)


def order_id_normalize(raw: str) -> str | None:
    """The canonical form (the form's prefix and the digits), or None if ``raw``
    cannot be an order id of this shop.

    None is handled like an unknown order by callers, so a garbled id never reaches
    a database query or a URL.
    """
    return order_ids().normalize(raw)


def order_id_find(text: str) -> str | None:
    """The first order id in free text, canonical, or None."""
    return order_ids().find(text)


def order_id_example() -> str:
    """An id in the shop's first form, for "it looks like ..." hints."""
    return order_ids().example()


def order_id_for_url(order_id: str) -> str:
    """The id as a path segment: "#" would start a URL fragment, so it is dropped."""
    return order_id.lstrip("#")
