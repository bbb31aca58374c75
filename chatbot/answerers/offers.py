"""What a reply offers the shopper, in its actions. The dialogue remembers an offer, so
a "yes" next turn accepts it (chatbot/dialogue.py)."""

from __future__ import annotations

OFFER_HUMAN = "offer:human"
OFFER_STATUS = "offer:status"
OFFER_RETURN = "offer:return"
