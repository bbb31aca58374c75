"""The demo shop front: a stand-in for a shop's logged-in page with the widget embedded.

It plays the shop's part of docs/identity.md: in the demo shop's mode
(``TIERDESK_DEMO_SHOP``, with the demo order backend) it signs a shopper token for the
demo shopper (``?as=<customer_id>``, ``?token=none`` for an anonymous visitor) so the bot
can answer "where is my order" for them; otherwise every visitor is anonymous.
Everything it reads from the other apps is imported lazily and optional: the page
renders before the demo data is seeded, and with any of those modules missing.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from django.conf import settings
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

logger = logging.getLogger(__name__)

DEFAULT_SHOPPER = "james_li_5688"  # has one of the demo's late orders
CUSTOMER_ID_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
PRODUCTS_SHOWN = 6


@dataclass(frozen=True)
class ShopProduct:
    name: str
    price_from: str  # the cheapest available variant, in the shop's currency; "" if none
    variants: int


def _products() -> list[ShopProduct]:
    """The first products of the shop's catalogue (shop.Product: imported, synced or
    edited in the admin), so each shop's page shows its own; none before it has any."""
    try:
        from chatbot.answerers.order_format import money
        from shop.catalogue import catalogue_products

        rows = catalogue_products(limit=PRODUCTS_SHOWN)
        products = []
        for row in rows:
            prices = [v.price for v in row.variants if v.available]
            price = money(min(prices)) if prices else ""
            products.append(ShopProduct(row.name, price, len(row.variants)))
    except (ImportError, DatabaseError) as exc:
        logger.info("demo page: no catalogue (%s)", exc)
        return []
    return products


def _shopper(customer_id: str) -> tuple[str, list[str]]:
    """The shopper's display name and order ids, or the bare id and [] without data."""
    try:
        from chatbot.orders import selectors

        customer = selectors.customer_get(customer_id=customer_id)
        if customer is None:
            return customer_id, []
        orders = selectors.order_list_for_customer(customer_id=customer_id)
    except (ImportError, AttributeError, DatabaseError) as exc:
        logger.info("demo page: no shop data for %s (%s)", customer_id, exc)
        return customer_id, []
    name = f"{customer.first_name} {customer.last_name}".strip() or customer_id
    return name, [order.order_id for order in orders]


def _token(customer_id: str, *, vip: bool) -> str | None:
    # The page signs a token for whoever ?as= names: a demo convenience that must not
    # run where the signing key or the orders are a real shop's. Only the demo shop's
    # mode with its own tables (TIERDESK_DEMO_IMPERSONATION), and never in production.
    if not settings.TIERDESK_DEMO_IMPERSONATION or settings.PRODUCTION:
        return None
    try:
        from chatbot.orders.identity import shopper_token_issue
    except ImportError:
        return None
    return shopper_token_issue(customer_id=customer_id, vip=vip)


def _hint_order(order_ids: list[str]) -> str:
    """The order the page suggests asking about: a late one, the demo's best story."""
    try:
        from chatbot.orders.seed import LATE_ORDERS
    except ImportError:
        LATE_ORDERS = frozenset()
    return next((o for o in order_ids if o in LATE_ORDERS), (order_ids or [""])[0])


def demo_shop(request: HttpRequest) -> HttpResponse:
    requested = request.GET.get("as", DEFAULT_SHOPPER).strip()
    customer_id = requested if CUSTOMER_ID_RE.match(requested) else DEFAULT_SHOPPER
    anonymous = request.GET.get("token", "").lower() == "none"
    lang = "zh" if request.GET.get("lang", "").lower().startswith("zh") else "en"

    token = None
    display_name, order_ids = "", list[str]()
    # Outside the demo shop's mode the page signs nobody in: it shows the widget to an
    # anonymous visitor, as a shop's public page would.
    if not settings.TIERDESK_DEMO_IMPERSONATION:
        anonymous = True
    if not anonymous:
        display_name, order_ids = _shopper(customer_id)
        token = _token(customer_id, vip=request.GET.get("vip") == "1")

    context = {
        "products": _products(),
        # The demo's name and story only in its mode: another shop's page lists its own.
        "demo_shop": settings.TIERDESK_DEMO_SHOP,
        "anonymous": anonymous,
        "customer_id": customer_id,
        "display_name": display_name,
        "order_ids": order_ids,
        "hint_order": _hint_order(order_ids),
        "token": token,
        "lang": lang,
        # Optional per-page override of the server's pacing (ms); digits only.
        "pacing": request.GET.get("pacing", "") if request.GET.get("pacing", "").isdigit() else "",
    }
    response = render(request, "frontend/demo.html", context)
    # The page carries a signed token: keep it out of shared caches.
    response["Cache-Control"] = "private, no-store"
    return response
