"""What a reply offers the shopper, in its actions. The dialogue remembers an offer, so
a "yes" or a "no" next turn answers it (chatbot/dialogue.py), and the widget shows the
offer's Yes/No buttons.

A template that ends in an offer carries it wherever it is said (``offers_of``, read by
``base.say`` and ``l1.phrase``): a flow that says "Would you like me to pass you to a
person?" can't leave out the buttons or the reading of the answer."""

from __future__ import annotations

from routing import types as rt

OFFER_HUMAN = "offer:human"
OFFER_STATUS = "offer:status"
OFFER_RETURN = "offer:return"

# (intent, template key) -> the offer the template's question makes.
TEMPLATE_OFFERS: dict[tuple[str, str], str] = {
    # A late order: track it, wait, or a person.
    (rt.ORDER_STATUS, "late"): OFFER_HUMAN,
    (rt.ORDER_STATUS, "late_pending"): OFFER_HUMAN,
    (rt.DELIVERY_TIME, "late"): OFFER_HUMAN,
    (rt.DELIVERY_TIME, "late_pending"): OFFER_HUMAN,
    # A change the order's status doesn't allow, and what can be done instead.
    (rt.CANCEL_ORDER, "not_allowed_processed"): OFFER_STATUS,
    (rt.CANCEL_ORDER, "not_allowed_delivered"): OFFER_RETURN,
    (rt.CHANGE_ADDRESS, "not_allowed_processed"): OFFER_STATUS,
    (rt.CHANGE_ADDRESS, "not_allowed_delivered"): OFFER_HUMAN,
    # A return or exchange past the return window: only a person can look at it.
    (rt.RETURN_ITEM, "outside_window"): OFFER_HUMAN,
    (rt.EXCHANGE_ITEM, "outside_window"): OFFER_HUMAN,
    (rt.RETURN_ITEM, "none_in_window"): OFFER_HUMAN,
    (rt.EXCHANGE_ITEM, "none_in_window"): OFFER_HUMAN,
    # The handoff's own offers (handoff_dialogue.handoff_offer).
    (rt.HANDOFF, "offer"): OFFER_HUMAN,
    (rt.HANDOFF, "offer_after_trouble"): OFFER_HUMAN,
}


def offers_of(intent: str, key: str) -> list[str]:
    """The offer template ``intent.key`` makes, as the reply's actions; [] for none."""
    offer = TEMPLATE_OFFERS.get((intent, key))
    return [offer] if offer else []
