"""The shopper's case as the chat knows it, for the rule an order flow quotes
(``knowledge.rule_case``): the membership level and whether the order leaves the
shop's country, from what the message says first, then from the records.

- membership: a level the message names ("as a gold member"); else, for a verified
  shopper, the shop profile's default level, the one the return flow applies too
  (the order system gives none); unknown before the shopper is verified.
- abroad: unknown when the message names a place (the bot can't tell which country
  a city is in); else the order in hand's shipping country, or the one country all the
  shopper's orders ship to, against the shop profile's country.

Blocking (order service, spaCy).
"""

from __future__ import annotations

from knowledge import named_case, rule_case
from shop.profile import shop_profile

from .base import TurnContext


def shopper_case(ctx: TurnContext) -> rule_case.ShopperCase:
    profile = shop_profile()
    levels = profile.returns.windows_by_membership
    named = rule_case.levels_named(ctx.text, levels)
    membership = ""
    if len(named) == 1:
        membership = next(iter(named))
    elif not named and ctx.customer_id:
        membership = profile.returns.default_membership
    places = named_case.places_in(ctx.text)
    return rule_case.ShopperCase(
        membership=membership,
        abroad=None if places else _abroad(ctx, profile.country),
        places=places,
    )


def _abroad(ctx: TurnContext, home: str) -> bool | None:
    if not ctx.customer_id:
        return None
    service = ctx.orders()
    last = ctx.state.get("last_order_id")
    order = service.order_get(customer_id=ctx.customer_id, order_id=last) if last else None
    orders = [order] if order else service.orders_for_customer(customer_id=ctx.customer_id)
    found = {rule_case.abroad_of(o.address.country, home) for o in orders}
    return found.pop() if len(found) == 1 else None
