"""The demo shop's return and exchange policy, as data the code checks.

Written from the shop's own policy texts, not invented here:

- third_party/tau_bench_retail/wiki.md ("Return delivered order", "Exchange delivered
  order"): only a delivered order can be returned or exchanged; the shopper confirms
  the order, the items and where the refund goes (the original payment method); an
  item can be exchanged only for an available item of the same product in another
  option; the order then becomes "return requested" / "exchange requested" and the
  shopper is emailed how to send the items back.
- knowledge/seed_data/en/returns-by-membership.md (and zh/returns.md): the return
  window depends on the membership level, counted from the purchase date (guests 30
  days, Bronze 90, Silver 6 months, Gold any time); items must be unworn with their
  tags attached; the shop emails a prepaid shipping label (the shop pays the return
  shipping); a gift-card refund is immediate, a card or PayPal one takes 5 to 7
  business days.

The demo shop's customers carry no membership level, so the bot applies the guest
window, the shortest one: it never promises a return the policy doesn't allow. The
reply templates (routing/seed_data/templates.json, ``return_item`` and
``exchange_item``) state these conditions with ``{window_days}`` filled from here.
A shop on the HTTP backend applies its own policy in its order API
(docs/order-api.md) and refuses with a reason; the bot passes the reason on.
"""

from __future__ import annotations

from datetime import date, timedelta

# Days from the purchase date within which a delivered item can be returned or
# exchanged (the guest window of returns-by-membership.md).
RETURN_WINDOW_DAYS = 30


def return_deadline(placed_on: date) -> date:
    """The last day a return or exchange can be requested for an order placed then."""
    return placed_on + timedelta(days=RETURN_WINDOW_DAYS)


def within_return_window(placed_on: date, today: date) -> bool:
    return today <= return_deadline(placed_on)
