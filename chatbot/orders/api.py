"""Reference implementation of the order API (docs/order-api.md) for the demo shop.

A shop that connects its own order system implements the same endpoints; Tierdesk
serves them here over its own tables so that ``HttpOrderService`` can be run and
tested against a real server. Thin views: authentication and JSON in, the demo
shop's selectors and services (through ``DjangoOrderService``) do the work.

The API is off unless ``TIERDESK_ORDER_API_KEY`` is set: it then answers 404 to
everything, as if it were not there.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from shop.catalogue import profile_category

from . import order_wire, selectors
from .backends import DjangoOrderService
from .types import OrderNotAllowed, OrderNotFound, OrderServiceError

View = Callable[..., JsonResponse]

_shop = DjangoOrderService()


def _error(status: int, code: str, message: str) -> JsonResponse:
    response = JsonResponse({"error": {"code": code, "message": message}}, status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="tierdesk-order-api"'
    return response


def _api(*, method: str) -> Callable[[View], View]:
    def decorator(view: View) -> View:
        # Server-to-server calls authenticated by a bearer key carry no cookies, so
        # CSRF protection has nothing to protect here.
        @csrf_exempt
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
            key = settings.TIERDESK_ORDER_API_KEY
            if not key:
                return _error(404, "not_found", "The order API is disabled.")
            scheme, _, token = request.headers.get("Authorization", "").partition(" ")
            # compare_digest: the time taken must not reveal how much of a guess matched.
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                token.strip().encode(), key.encode()
            ):
                return _error(
                    401, "unauthorized", "A valid 'Authorization: Bearer' key is required."
                )
            if request.method != method:
                response = _error(405, "method_not_allowed", f"Use {method}.")
                response["Allow"] = method
                return response
            return view(request, *args, **kwargs)

        return wrapper

    return decorator


def _json_body(request: HttpRequest) -> dict[str, Any] | None:
    try:
        body = json.loads(request.body or b"{}")
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


@_api(method="GET")
def customers(request: HttpRequest) -> JsonResponse:
    params = request.GET
    if "email" in params:
        found = _shop.customer_by_email(email=params["email"])
        result = [found] if found else []
    elif {"first_name", "last_name", "zip"} <= params.keys():
        found = _shop.customer_by_name_zip(
            first_name=params["first_name"], last_name=params["last_name"], zip=params["zip"]
        )
        result = [found] if found else []
    elif "zip" in params:
        result = _shop.customers_in_zip(zip=params["zip"])
    else:
        return _error(400, "bad_request", "Give email, or first_name+last_name+zip, or zip.")
    return JsonResponse({"customers": [order_wire.customer_to_json(c) for c in result]})


@_api(method="GET")
def customer_detail(request: HttpRequest, customer_id: str) -> JsonResponse:
    customer = _shop.customer_by_id(customer_id=customer_id)
    if customer is None:
        return _error(404, "customer_not_found", f"No customer {customer_id}.")
    return JsonResponse({"customer": order_wire.customer_to_json(customer)})


@_api(method="GET")
def customer_orders(request: HttpRequest, customer_id: str) -> JsonResponse:
    # An unknown customer has no orders: the same answer as a customer with none.
    orders = _shop.orders_for_customer(customer_id=customer_id)
    return JsonResponse({"orders": [order_wire.order_to_json(o) for o in orders]})


@_api(method="GET")
def customer_order(request: HttpRequest, customer_id: str, order_id: str) -> JsonResponse:
    order = _shop.order_get(customer_id=customer_id, order_id=order_id)
    if order is None:
        # Word for word what OrderNotFound says, whether the order is missing or
        # belongs to another customer.
        return _error(404, "order_not_found", str(OrderNotFound(order_id)))
    return JsonResponse({"order": order_wire.order_to_json(order)})


def _write(action: Callable[[], Any], *, key: str = "order", dump: Any = None) -> JsonResponse:
    try:
        result = action()
    except OrderNotFound as exc:
        return _error(404, exc.code, str(exc))
    except OrderNotAllowed as exc:
        return _error(409, exc.code, str(exc))
    except OrderServiceError as exc:
        return _error(400, exc.code, str(exc))
    return JsonResponse({key: (dump or order_wire.order_to_json)(result)})


@_api(method="POST")
def order_cancel(request: HttpRequest, customer_id: str, order_id: str) -> JsonResponse:
    body = _json_body(request)
    if body is None or not isinstance(body.get("reason", ""), str):
        return _error(400, "bad_request", 'Send a JSON object {"reason": "..."}.')
    return _write(
        lambda: _shop.order_cancel(
            customer_id=customer_id, order_id=order_id, reason=body.get("reason", "")
        )
    )


@_api(method="POST")
def order_address(request: HttpRequest, customer_id: str, order_id: str) -> JsonResponse:
    body = _json_body(request)
    try:
        address = order_wire.address_from_json((body or {}).get("address"))
    except order_wire.WireError as exc:
        return _error(400, "invalid_address", f"Send a JSON object {{'address': {{...}}}}: {exc}")
    return _write(
        lambda: _shop.order_change_address(
            customer_id=customer_id, order_id=order_id, address=address
        )
    )


@_api(method="GET")
def shipping_options(request: HttpRequest) -> JsonResponse:
    options = _shop.shipping_options()
    return JsonResponse(
        {"shipping_options": [order_wire.shipping_option_to_json(o) for o in options]}
    )


@_api(method="POST")
def order_return(request: HttpRequest, customer_id: str, order_id: str) -> JsonResponse:
    body = _json_body(request)
    item_ids = (body or {}).get("item_ids")
    if not isinstance(item_ids, list) or not all(isinstance(i, str) for i in item_ids):
        return _error(400, "bad_request", 'Send a JSON object {"item_ids": ["...", ...]}.')
    return _write(
        lambda: _shop.request_return(customer_id=customer_id, order_id=order_id, item_ids=item_ids),
        key="return",
        dump=order_wire.return_to_json,
    )


@_api(method="POST")
def order_exchange(request: HttpRequest, customer_id: str, order_id: str) -> JsonResponse:
    body = _json_body(request)
    exchanges = (body or {}).get("exchanges")
    if not isinstance(exchanges, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in exchanges.items()
    ):
        return _error(
            400, "bad_request", 'Send a JSON object {"exchanges": {"old item id": "new item id"}}.'
        )
    return _write(
        lambda: _shop.request_exchange(
            customer_id=customer_id, order_id=order_id, exchanges=exchanges
        ),
        key="return",
        dump=order_wire.return_to_json,
    )


@_api(method="GET")
def item_variants(request: HttpRequest, item_id: str) -> JsonResponse:
    variants = _shop.item_variants(item_id=item_id)
    return JsonResponse({"variants": [order_wire.item_to_json(v) for v in variants]})


# Products per page of GET products: a page stays well under a megabyte.
CATALOGUE_PAGE_SIZE = 100


@_api(method="GET")
def products(request: HttpRequest) -> JsonResponse:
    """The demo shop's catalogue, a page at a time (docs/order-api.md, Catalogue)."""
    raw = request.GET.get("page", "1")
    if not raw.isdigit() or int(raw) < 1:
        return _error(400, "bad_request", "page must be a whole number from 1.")
    page = int(raw)
    rows, more = selectors.product_page(page=page, size=CATALOGUE_PAGE_SIZE)
    return JsonResponse(
        {
            "products": [
                order_wire.catalogue_product_to_json(
                    product_id=row.product_id,
                    name=row.name,
                    variants=row.variants or {},
                    category=profile_category(row.name),
                )
                for row in rows
            ],
            "next_page": page + 1 if more else None,
        }
    )
