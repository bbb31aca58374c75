"""The two order-system backends and the per-process accessor.

- ``DjangoOrderService``: the demo shop's own tables (models.py).
- ``HttpOrderService``: a shop's real order API over HTTP, speaking the contract in
  docs/order-api.md (which api.py serves for the demo shop).

``get_order_service()`` builds the one named by ``settings.ORDER_SERVICE`` once per
process and is reset on ``setting_changed`` (apps.py), so tests can swap it with
``override_settings``.

Methods are synchronous (ORM and blocking HTTP): async callers wrap them with
``sync_to_async`` / ``database_sync_to_async``.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterator
from typing import Any

import httpx
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from routing.order_ids import order_id_for_url, order_id_normalize

from . import order_wire, selectors, services
from .types import (
    Address,
    Customer,
    OrderFacts,
    OrderItem,
    OrderNotAllowed,
    OrderNotFound,
    OrderService,
    OrderServiceError,
    ReturnFacts,
    ShippingOption,
)

logger = logging.getLogger(__name__)

UNAVAILABLE = "order_system_unavailable"
# Customer ids the HTTP contract can carry in a path segment (docs/order-api.md).
_CUSTOMER_ID_RE = re.compile(r"^[A-Za-z0-9_.@+:-]{1,128}$")


class DjangoOrderService:
    """The demo shop: reads through selectors, writes through services."""

    def customer_by_id(self, *, customer_id: str) -> Customer | None:
        return selectors.customer_get(customer_id=customer_id)

    def customer_by_email(self, *, email: str) -> Customer | None:
        return selectors.customer_get_by_email(email=email)

    def customer_by_name_zip(self, *, first_name: str, last_name: str, zip: str) -> Customer | None:
        return selectors.customer_get_by_name_zip(
            first_name=first_name, last_name=last_name, zip=zip
        )

    def customers_in_zip(self, *, zip: str) -> list[Customer]:
        return selectors.customer_list_in_zip(zip=zip)

    def order_get(self, *, customer_id: str, order_id: str) -> OrderFacts | None:
        return selectors.order_get(customer_id=customer_id, order_id=order_id)

    def orders_for_customer(self, *, customer_id: str) -> list[OrderFacts]:
        return selectors.order_list_for_customer(customer_id=customer_id)

    def order_cancel(self, *, customer_id: str, order_id: str, reason: str) -> OrderFacts:
        return services.order_cancel(customer_id=customer_id, order_id=order_id, reason=reason)

    def order_change_address(
        self, *, customer_id: str, order_id: str, address: Address
    ) -> OrderFacts:
        return services.order_change_address(
            customer_id=customer_id, order_id=order_id, address=address
        )

    def shipping_options(self) -> list[ShippingOption]:
        return selectors.shipping_option_list()

    def item_variants(self, *, item_id: str) -> list[OrderItem]:
        return selectors.product_variants_for_item(item_id=item_id)

    def request_return(
        self, *, customer_id: str, order_id: str, item_ids: list[str]
    ) -> ReturnFacts:
        return services.request_return(
            customer_id=customer_id, order_id=order_id, item_ids=item_ids
        )

    def request_exchange(
        self, *, customer_id: str, order_id: str, exchanges: dict[str, str]
    ) -> ReturnFacts:
        return services.request_exchange(
            customer_id=customer_id, order_id=order_id, exchanges=exchanges
        )


class HttpOrderService:
    """Client for a shop's order API (docs/order-api.md).

    Every failure of the shop's system (unreachable, timeout, 5xx, 429, a rejected
    API key, a body of the wrong shape) becomes
    ``OrderServiceError("order_system_unavailable")``: the shopper gets a clear
    "try again later" and the details go to the log for the operator. A 404 is read
    as "not found" only when its body carries the documented error code; a bare 404
    means a wrong URL or a disabled API, and silently answering "no such order" to
    every shopper would hide that.
    """

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        base_url = settings.TIERDESK_ORDER_API_URL if base_url is None else base_url
        api_key = settings.TIERDESK_ORDER_API_KEY if api_key is None else api_key
        timeout_s = settings.TIERDESK_ORDER_API_TIMEOUT_S if timeout_s is None else timeout_s
        if not base_url:
            raise ImproperlyConfigured("the http order backend needs TIERDESK_ORDER_API_URL")
        if not api_key:
            raise ImproperlyConfigured("the http order backend needs TIERDESK_ORDER_API_KEY")
        self.timeout_s = float(timeout_s)
        self._client = httpx.Client(
            base_url=base_url,
            headers={
                "Authorization": f"Bearer {api_key}",
                "Accept": "application/json",
                "User-Agent": "tierdesk-order-client/1",
            },
            # Connecting gets at most 2 s of the budget: a shop that is down should
            # fail fast, while a slow but alive one may use the whole read timeout.
            timeout=httpx.Timeout(self.timeout_s, connect=min(2.0, self.timeout_s)),
            # One retry, on connection failures only: nothing was sent, so it is
            # safe even for the POSTs.
            transport=transport or httpx.HTTPTransport(retries=1),
            follow_redirects=False,
        )

    def close(self) -> None:
        self._client.close()

    # --- transport ---------------------------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        json: dict[str, Any] | None = None,
    ) -> tuple[int, dict[str, Any]]:
        try:
            response = self._client.request(method, path, params=params, json=json)
        except httpx.TimeoutException as exc:
            logger.warning("order API %s %s timed out: %r", method, path, exc)
            raise OrderServiceError(
                UNAVAILABLE, f"The order system did not answer within {self.timeout_s:g} s."
            ) from exc
        except httpx.HTTPError as exc:
            logger.warning("order API %s %s failed: %r", method, path, exc)
            raise OrderServiceError(UNAVAILABLE, "The order system cannot be reached.") from exc

        status = response.status_code
        if status in (401, 403):
            logger.error("order API rejected Tierdesk's API key (HTTP %s)", status)
            raise OrderServiceError(UNAVAILABLE, "The order system refused our credentials.")
        if status == 429 or status >= 500:
            logger.warning("order API %s %s answered HTTP %s", method, path, status)
            raise OrderServiceError(UNAVAILABLE, f"The order system answered HTTP {status}.")
        try:
            body = response.json()
        except ValueError as exc:
            raise self._bad_response(method, path, f"HTTP {status} with a non-JSON body") from exc
        if not isinstance(body, dict):
            raise self._bad_response(method, path, "the body is not a JSON object")
        return status, body

    @staticmethod
    def _bad_response(method: str, path: str, why: str) -> OrderServiceError:
        logger.error("order API %s %s: %s", method, path, why)
        return OrderServiceError(UNAVAILABLE, "The order system gave an unexpected answer.")

    @staticmethod
    def _error_code(body: dict[str, Any]) -> tuple[str, str]:
        error = body.get("error")
        if isinstance(error, dict):
            return str(error.get("code", "")), str(error.get("message", ""))
        return "", ""

    def _parse(self, method: str, path: str, parse: Any, data: Any) -> Any:
        try:
            return parse(data)
        except order_wire.WireError as exc:
            raise self._bad_response(method, path, str(exc)) from exc

    def _customers(self, params: dict[str, str]) -> list[Customer]:
        status, body = self._request("GET", "customers", params=params)
        if status != 200 or not isinstance(body.get("customers"), list):
            raise self._bad_response("GET", "customers", f"HTTP {status}")
        return [
            self._parse("GET", "customers", order_wire.customer_from_json, c)
            for c in body["customers"]
        ]

    @staticmethod
    def _one(customers: list[Customer]) -> Customer | None:
        # Same rule as the demo shop: only a unique match identifies a shopper.
        return customers[0] if len(customers) == 1 else None

    @staticmethod
    def _customer_path(customer_id: str) -> str | None:
        # Servers decode %2F and normalise "..", so an id outside the documented
        # alphabet could address another path: it is an unknown id, never sent.
        if not _CUSTOMER_ID_RE.match(customer_id) or customer_id in {".", ".."}:
            return None
        return f"customers/{customer_id}"

    def _order_path(self, customer_id: str, order_id: str) -> str | None:
        customer_path = self._customer_path(customer_id)
        if customer_path is None:
            return None
        return f"{customer_path}/orders/{order_id_for_url(order_id)}"

    # --- OrderService ------------------------------------------------------------------------

    def customer_by_id(self, *, customer_id: str) -> Customer | None:
        path = self._customer_path(customer_id)
        if path is None:
            return None
        status, body = self._request("GET", path)
        if status == 200:
            return self._parse("GET", path, order_wire.customer_from_json, body.get("customer"))
        if status == 404 and self._error_code(body)[0] == "customer_not_found":
            return None
        raise self._bad_response("GET", path, f"HTTP {status}")

    def customer_by_email(self, *, email: str) -> Customer | None:
        email = email.strip()
        return self._one(self._customers({"email": email})) if email else None

    def customer_by_name_zip(self, *, first_name: str, last_name: str, zip: str) -> Customer | None:
        if not (first_name.strip() and last_name.strip() and zip.strip()):
            return None
        return self._one(
            self._customers(
                {
                    "first_name": first_name.strip(),
                    "last_name": last_name.strip(),
                    "zip": zip.strip(),
                }
            )
        )

    def customers_in_zip(self, *, zip: str) -> list[Customer]:
        return self._customers({"zip": zip.strip()}) if zip.strip() else []

    def order_get(self, *, customer_id: str, order_id: str) -> OrderFacts | None:
        canonical = order_id_normalize(order_id)
        if canonical is None:
            return None
        path = self._order_path(customer_id, canonical)
        if path is None:
            return None
        status, body = self._request("GET", path)
        if status == 200:
            return self._parse("GET", path, order_wire.order_from_json, body.get("order"))
        if status == 404 and self._error_code(body)[0] == "order_not_found":
            return None
        raise self._bad_response("GET", path, f"HTTP {status}")

    def orders_for_customer(self, *, customer_id: str) -> list[OrderFacts]:
        customer_path = self._customer_path(customer_id)
        if customer_path is None:
            return []
        path = f"{customer_path}/orders"
        status, body = self._request("GET", path)
        if status != 200 or not isinstance(body.get("orders"), list):
            raise self._bad_response("GET", path, f"HTTP {status}")
        return [self._parse("GET", path, order_wire.order_from_json, o) for o in body["orders"]]

    def _order_write(
        self,
        *,
        customer_id: str,
        order_id: str,
        action: str,
        payload: dict[str, Any],
        key: str = "order",
        parse: Any = order_wire.order_from_json,
    ) -> Any:
        canonical = order_id_normalize(order_id)
        order_path = None if canonical is None else self._order_path(customer_id, canonical)
        if canonical is None or order_path is None:
            raise OrderNotFound(canonical or order_id)
        path = f"{order_path}/{action}"
        status, body = self._request("POST", path, json=payload)
        if status in (200, 201):
            return self._parse("POST", path, parse, body.get(key))
        code, message = self._error_code(body)
        if status == 404 and code == "order_not_found":
            raise OrderNotFound(canonical)
        if status == 409 and code:
            raise OrderNotAllowed(code, message or f"Order {canonical} can't be changed now.")
        if status == 400 and code:
            raise OrderServiceError(code, message or "The order system refused the request.")
        raise self._bad_response("POST", path, f"HTTP {status}")

    def order_cancel(self, *, customer_id: str, order_id: str, reason: str) -> OrderFacts:
        return self._order_write(
            customer_id=customer_id, order_id=order_id, action="cancel", payload={"reason": reason}
        )

    def order_change_address(
        self, *, customer_id: str, order_id: str, address: Address
    ) -> OrderFacts:
        return self._order_write(
            customer_id=customer_id,
            order_id=order_id,
            action="address",
            payload={"address": order_wire.address_to_json(address)},
        )

    def item_variants(self, *, item_id: str) -> list[OrderItem]:
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", item_id):
            return []
        path = f"items/{item_id}/variants"
        status, body = self._request("GET", path)
        if status == 404 and self._error_code(body)[0] == "item_not_found":
            return []
        if status != 200 or not isinstance(body.get("variants"), list):
            raise self._bad_response("GET", path, f"HTTP {status}")
        return [self._parse("GET", path, order_wire.item_from_json, v) for v in body["variants"]]

    def _return_write(
        self, *, customer_id: str, order_id: str, action: str, payload: dict[str, Any]
    ) -> ReturnFacts:
        """A return or an exchange: both answer with the return they opened."""
        result: ReturnFacts = self._order_write(
            customer_id=customer_id,
            order_id=order_id,
            action=action,
            payload=payload,
            key="return",
            parse=order_wire.return_from_json,
        )
        return result

    def request_return(
        self, *, customer_id: str, order_id: str, item_ids: list[str]
    ) -> ReturnFacts:
        return self._return_write(
            customer_id=customer_id,
            order_id=order_id,
            action="return",
            payload={"item_ids": list(item_ids)},
        )

    def request_exchange(
        self, *, customer_id: str, order_id: str, exchanges: dict[str, str]
    ) -> ReturnFacts:
        return self._return_write(
            customer_id=customer_id,
            order_id=order_id,
            action="exchange",
            payload={"exchanges": dict(exchanges)},
        )

    def shipping_options(self) -> list[ShippingOption]:
        status, body = self._request("GET", "shipping-options")
        if status != 200 or not isinstance(body.get("shipping_options"), list):
            raise self._bad_response("GET", "shipping-options", f"HTTP {status}")
        return [
            self._parse("GET", "shipping-options", order_wire.shipping_option_from_json, o)
            for o in body["shipping_options"]
        ]

    # --- the catalogue (not part of OrderService: read by the sync, catalogue_sync.py) ----

    def catalogue_pages(self, *, max_pages: int) -> Iterator[list[Any]]:
        """The shop's products, a page at a time (``GET products?page=N``), as the
        decoded JSON objects; shop/catalogue_schema.py validates them. A page that
        names no next page ends it; more than ``max_pages`` is an error (a server
        that keeps answering ``next_page`` would otherwise never end the sync)."""
        page = 1
        while True:
            status, body = self._request("GET", "products", params={"page": str(page)})
            products, following = body.get("products"), body.get("next_page")
            if status != 200 or not isinstance(products, list):
                raise self._bad_response("GET", "products", f"HTTP {status}")
            yield products
            if following is None:
                return
            if not isinstance(following, int) or following <= page:
                raise self._bad_response("GET", "products", f"next_page {following!r}")
            if following > max_pages:
                raise OrderServiceError(
                    UNAVAILABLE, f"The shop's catalogue has more than {max_pages} pages."
                )
            page = following


# --- the per-process service ----------------------------------------------------------------------

# Settings that decide which service is built and how; a change to any drops the cache.
SERVICE_SETTINGS = frozenset(
    {
        "ORDER_SERVICE",
        "TIERDESK_ORDER_API_URL",
        "TIERDESK_ORDER_API_KEY",
        "TIERDESK_ORDER_API_TIMEOUT_S",
    }
)

_service: OrderService | None = None
_service_lock = threading.Lock()


def get_order_service() -> OrderService:
    """The configured order service, built on first use and then shared in this process."""
    global _service
    service = _service
    if service is None:
        with _service_lock:
            if _service is None:
                try:
                    cls = import_string(settings.ORDER_SERVICE)
                except ImportError as exc:
                    raise ImproperlyConfigured(
                        f"ORDER_SERVICE={settings.ORDER_SERVICE!r} cannot be imported: "
                        "set TIERDESK_ORDER_BACKEND to django or http"
                    ) from exc
                _service = cls()
            service = _service
    return service


def order_service_reset(*, setting: str | None = None, **kwargs: Any) -> None:
    """Drop the cached service (``setting_changed`` receiver; also callable directly)."""
    global _service
    if setting is not None and setting not in SERVICE_SETTINGS:
        return
    with _service_lock:
        service, _service = _service, None
    close = getattr(service, "close", None)
    if callable(close):
        close()
