"""The shop's return and exchange policy, as the code checks and the replies quote it.

The rules every shop shares come from the shop's policy texts
(third_party/tau_bench_retail/wiki.md, "Return delivered order", "Exchange delivered
order"): only a delivered order can be returned or exchanged; the shopper confirms the
order, the items and where the refund goes; an item can be exchanged only for an
available item of the same product in another option.

The values are the shop's, read from the shop profile (shop/profile.py, admin "Shop
profile"): the return window by membership level and by product category (named in
the profile, or the product's category in the catalogue, docs/catalogue.md; a
category's own window applies when it is shorter, so the bot never promises a return
the policy does not allow), the conditions items must meet by category, and the
restocking fee. The order system gives no membership level, so the profile's default
level applies. The reply templates (``return_item``, ``exchange_item``) quote these
through ``chatbot.answerers.order_format.returns_facts``. A shop on the HTTP backend
applies its own policy in its order API (docs/order-api.md) and refuses with a reason;
the bot passes the reason on.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal

from shop.catalogue import categories_by_name
from shop.profile import shop_profile
from shop.values import DEFAULT_CATEGORY


def _categories(item_names: Iterable[str]) -> tuple[str, ...]:
    """Each item's category: the profile's list of product names first, else the
    catalogue's category for the product when the profile has a window or conditions
    for it (so importing products as "final sale" is enough), else the default."""
    returns = shop_profile().returns
    names = list(item_names)
    own_rules = (*returns.windows_by_category, *returns.conditions_by_category)
    policy_keys = {key.casefold(): key for key in own_rules if key != DEFAULT_CATEGORY}
    unlisted = [name for name in names if returns.category(name) == DEFAULT_CATEGORY]
    catalogue = categories_by_name(unlisted) if unlisted and policy_keys else {}

    def category(name: str) -> str:
        listed = returns.category(name)
        if listed != DEFAULT_CATEGORY:
            return listed
        own = catalogue.get(name.strip().casefold(), "").casefold()
        return policy_keys.get(own, DEFAULT_CATEGORY)

    return tuple(dict.fromkeys(category(name) for name in names))


def return_window_days(item_names: Iterable[str] = (), membership: str = "") -> int | None:
    """Days from purchase in which these items can be returned or exchanged; None when
    there is no limit."""
    return shop_profile().returns.window_days(
        membership=membership, categories=_categories(item_names)
    )


def return_deadline(
    placed_on: date, item_names: Iterable[str] = (), membership: str = ""
) -> date | None:
    """The last day a return or exchange can be requested; None for any time."""
    days = return_window_days(item_names, membership)
    return None if days is None else placed_on + timedelta(days=days)


def within_return_window(
    placed_on: date, today: date, item_names: Iterable[str] = (), membership: str = ""
) -> bool:
    deadline = return_deadline(placed_on, item_names, membership)
    return deadline is None or today <= deadline


def return_conditions(item_names: Iterable[str], language: str) -> str:
    """The conditions these items must meet, in the reply's language, with the
    restocking fee when the shop charges one."""
    returns = shop_profile().returns
    text = returns.conditions(_categories(item_names), language)
    fee = returns.restocking_fee_percent
    if fee > 0:
        percent = f"{fee.normalize():f}"
        text += (
            f"；退款将扣除{percent}%的重新上架费"
            if language == "zh"
            else f"; a {percent}% restocking fee is kept from the refund"
        )
    return text


def refund_after_fee(amount: Decimal) -> Decimal:
    """What a return refunds after the shop's restocking fee."""
    fee = shop_profile().returns.restocking_fee_percent
    kept = (amount * fee / Decimal(100)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    return amount - kept
