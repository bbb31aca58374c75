"""A second shop's own systems for the browser tests: its order API, a real HTTP server
implementing the order contract (docs/order-api.md) over the test's data files, and
its web page, which signs the shopper in as a shop's page does (docs/identity.md).

Not Tierdesk's reference implementation (``/shop-api/`` over the demo's tables): a
separate server, so the test shows that a shop's own API, with its own ids, postcodes
and currency, is all Tierdesk needs. Stdlib only; each server runs in a thread of the
test process and is stopped by its context manager.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import csv
import hashlib
import hmac
import html
import json
import threading
import time
from collections.abc import Iterator
from datetime import date, timedelta
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from tests.net import free_port


def _money(value: Decimal) -> str:
    return f"{value.quantize(Decimal('0.01'))}"


class ShopData:
    """The shop's customers, orders and items, from ``orders.json`` and the catalogue
    CSV; writes (returns, cancels) change this copy only."""

    def __init__(self, directory: Path, today: date | None = None) -> None:
        raw = json.loads((directory / "orders.json").read_text(encoding="utf-8"))
        today = today or date.today()
        with (directory / "catalogue.csv").open(encoding="utf-8", newline="") as f:
            self.items = {
                row["sku"]: {
                    "item_id": row["sku"],
                    "product_id": row["product_id"],
                    "name": row["name"],
                    "price": row["price"],
                    "available": row["available"] == "true",
                    "options": dict(
                        part.strip().split("=", 1)
                        for part in row["options"].split(";")
                        if part.strip()
                    ),
                }
                for row in csv.DictReader(f)
            }
        self.customers = {c["customer_id"]: c for c in raw["customers"]}
        self.shipping_options = raw["shipping_options"]
        self.returns: dict[str, dict[str, Any]] = {}
        self.orders: dict[str, dict[str, Any]] = {}
        for spec in raw["orders"]:
            placed = today - timedelta(days=spec["placed_days_ago"])
            items = [self.item(sku) for sku in spec["items"]]
            self.orders[spec["order_id"]] = {
                "customer_id": spec["customer_id"],
                "order": {
                    "order_id": spec["order_id"],
                    "status": spec["status"],
                    "items": items,
                    "total": _money(sum((Decimal(i["price"]) for i in items), Decimal(0))),
                    "address": raw["addresses"][spec["customer_id"]],
                    "placed_on": placed.isoformat(),
                    "estimated_delivery": (
                        placed + timedelta(days=spec["delivery_days"])
                    ).isoformat(),
                    "carrier": spec["carrier"],
                    "tracking_ids": spec["tracking_ids"],
                    "refunds": [],
                    "payment_method": spec["payment_method"],
                },
            }
        self.return_window_days = json.loads(
            (directory / "profile.json").read_text(encoding="utf-8")
        )["return_window_days"]["customer"]
        self.lock = threading.Lock()

    def item(self, sku: str) -> dict[str, Any]:
        item = self.items[sku]
        return {k: item[k] for k in ("item_id", "name", "price", "options")}

    def order(self, customer_id: str, order_id: str) -> dict[str, Any] | None:
        """The customer's order, the id with or without its ``#``; another customer's
        order is no order at all (the contract's privacy rule)."""
        digits = unquote(order_id).lstrip("#")
        row = self.orders.get(f"#{digits}")
        return row["order"] if row and row["customer_id"] == customer_id else None


class _ApiHandler(BaseHTTPRequestHandler):
    server: _ApiServer

    def log_message(self, format: str, *args: Any) -> None:
        self.server.requests.append(f"{self.command} {self.path}")

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if status == 401:
            self.send_header("WWW-Authenticate", "Bearer")
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, code: str, message: str) -> None:
        self._send(status, {"error": {"code": code, "message": message}})

    def _authorised(self) -> bool:
        given = self.headers.get("Authorization", "")
        if hmac.compare_digest(given.encode(), f"Bearer {self.server.key}".encode()):
            return True
        self._error(401, "unauthorized", "a valid API key is required")
        return False

    def _parts(self) -> tuple[list[str], dict[str, list[str]]]:
        url = urlsplit(self.path)
        return [p for p in url.path.split("/") if p][1:], parse_qs(url.query)  # drop "api"

    def do_GET(self) -> None:
        if not self._authorised():
            return
        shop = self.server.shop
        parts, query = self._parts()
        with shop.lock:
            match parts:
                case ["customers"]:
                    self._customers(query)
                case ["customers", customer_id]:
                    customer = shop.customers.get(customer_id)
                    if customer is None:
                        self._error(404, "customer_not_found", "no such customer")
                    else:
                        self._send(200, {"customer": customer})
                case ["customers", customer_id, "orders"]:
                    orders = [
                        row["order"]
                        for row in shop.orders.values()
                        if row["customer_id"] == customer_id
                    ]
                    self._send(200, {"orders": orders})
                case ["customers", customer_id, "orders", order_id]:
                    order = shop.order(customer_id, order_id)
                    if order is None:
                        self._error(404, "order_not_found", f"no order #{order_id.lstrip('#')}")
                    else:
                        self._send(200, {"order": order})
                case ["items", item_id, "variants"]:
                    item = shop.items.get(item_id)
                    variants = [
                        shop.item(sku)
                        for sku, other in shop.items.items()
                        if item
                        and sku != item_id
                        and other["product_id"] == item["product_id"]
                        and other["available"]
                    ]
                    self._send(200, {"variants": variants})
                case ["shipping-options"]:
                    self._send(200, {"shipping_options": shop.shipping_options})
                case _:
                    self._error(404, "not_found", "no such endpoint")

    def _customers(self, query: dict[str, list[str]]) -> None:
        shop = self.server.shop
        wanted = {k: v[0].strip().casefold() for k, v in query.items() if v and v[0].strip()}
        if not wanted or set(wanted) - {"email", "first_name", "last_name", "zip"}:
            self._error(400, "bad_request", "query by email, name and zip, or zip")
            return
        found = [
            c
            for c in shop.customers.values()
            if all(str(c[k]).casefold() == v for k, v in wanted.items())
        ]
        self._send(200, {"customers": found})

    def do_POST(self) -> None:
        if not self._authorised():
            return
        shop = self.server.shop
        parts, _ = self._parts()
        try:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._error(400, "bad_request", "the body is not JSON")
            return
        with shop.lock:
            match parts:
                case ["customers", customer_id, "orders", order_id, "return"]:
                    self._return(customer_id, order_id, body)
                case ["customers", customer_id, "orders", order_id, "cancel"]:
                    order = shop.order(customer_id, order_id)
                    if order is None:
                        self._error(404, "order_not_found", f"no order #{order_id}")
                    elif order["status"] != "pending":
                        self._error(
                            409, "order_not_allowed", "only pending orders can be cancelled"
                        )
                    else:
                        order["status"] = "cancelled"
                        order["estimated_delivery"] = None
                        order["refunds"].append(order["total"])
                        self._send(200, {"order": order})
                case _:
                    self._error(404, "not_found", "no such endpoint")

    def _return(self, customer_id: str, order_id: str, body: dict[str, Any]) -> None:
        shop = self.server.shop
        order = shop.order(customer_id, order_id)
        if order is None:
            self._error(404, "order_not_found", f"no order #{order_id}")
            return
        item_ids = body.get("item_ids")
        by_id = {i["item_id"]: i for i in order["items"]}
        if not isinstance(item_ids, list) or not item_ids or set(item_ids) - set(by_id):
            self._error(400, "invalid_items", "name items of this order")
            return
        stored = shop.returns.get(order["order_id"])
        if stored is not None:
            if sorted(i["item_id"] for i in stored["items"]) == sorted(item_ids):
                self._send(200, {"return": {**stored, "created": False}})
            else:
                self._error(409, "already_requested", "a return was already requested")
            return
        if order["status"] != "delivered":
            self._error(409, "not_delivered", "only a delivered order can be returned")
            return
        placed = date.fromisoformat(order["placed_on"])
        if date.today() > placed + timedelta(days=shop.return_window_days):
            self._error(409, "outside_return_window", "the 14-day return window has ended")
            return
        items = [
            {**copy.deepcopy(by_id[i]), "new_item_id": "", "new_options": {}, "new_price": None}
            for i in item_ids
        ]
        record = {
            "order_id": order["order_id"],
            "kind": "return",
            "status": "requested",
            "items": items,
            "amount": _money(sum((Decimal(i["price"]) for i in items), Decimal(0))),
            "payment_method": order["payment_method"],
        }
        shop.returns[order["order_id"]] = record
        order["status"] = "return requested"
        self._send(200, {"return": {**record, "created": True}})


class _ApiServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, shop: ShopData, key: str) -> None:
        super().__init__(("127.0.0.1", port), _ApiHandler)
        self.shop = shop
        self.key = key
        self.requests: list[str] = []


def shopper_token(customer_id: str, key: str, *, ttl_s: int = 900) -> str:
    """A shopper token as the shop signs it, by docs/identity.md's recipe."""

    def b64url(raw: bytes) -> str:
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    payload = {"customer_id": customer_id, "vip": False, "exp": int(time.time()) + ttl_s}
    body = b64url(json.dumps(payload).encode())
    sig = b64url(hmac.new(key.encode(), body.encode(), hashlib.sha256).digest())
    return f"{body}.{sig}"


PAGE = """<!doctype html>
<html lang="en-GB"><head><meta charset="utf-8"><title>Pennine Cycles</title>
<style>body{{font:16px system-ui;margin:2rem;max-width:40rem}}h1{{color:#1d5c3a}}</style>
<script src="{tierdesk}/static/tierdesk/widget.js" defer></script></head>
<body><h1>Pennine Cycles</h1><p>Signed in as {name}. Gravel, trail and commuting bikes,
built in Leeds.</p>
<tierdesk-chat endpoint="{ws}/ws/chat/" token="{token}" shopper="{shopper}"
  lang="en"></tierdesk-chat></body></html>
"""


class _PageHandler(BaseHTTPRequestHandler):
    server: _PageServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        server = self.server
        customer = server.shop.customers[server.customer_id]
        # The shop signs a fresh token on every page render.
        page = PAGE.format(
            tierdesk=server.tierdesk,
            ws=server.tierdesk.replace("http", "ws", 1),
            token=html.escape(shopper_token(server.customer_id, server.token_key)),
            shopper=hashlib.sha256(server.customer_id.encode()).hexdigest()[:16],
            name=html.escape(f"{customer['first_name']} {customer['last_name']}"),
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)


class _PageServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self, port: int, shop: ShopData, customer_id: str, tierdesk: str, token_key: str
    ) -> None:
        super().__init__(("127.0.0.1", port), _PageHandler)
        self.shop = shop
        self.customer_id = customer_id
        self.tierdesk = tierdesk
        self.token_key = token_key


@contextlib.contextmanager
def _serving(server: ThreadingHTTPServer) -> Iterator[str]:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        yield f"http://{host!s}:{port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@contextlib.contextmanager
def order_api_run(shop: ShopData, key: str) -> Iterator[tuple[str, _ApiServer]]:
    """The shop's order API; yields its base URL (``.../api/``) and the server, whose
    ``requests`` list what Tierdesk asked."""
    server = _ApiServer(free_port(), shop, key)
    with _serving(server) as url:
        yield f"{url}/api/", server


@contextlib.contextmanager
def shop_page_run(
    shop: ShopData, *, customer_id: str, tierdesk: str, token_key: str, port: int
) -> Iterator[str]:
    """The shop's page, signed in as ``customer_id``, embedding Tierdesk's widget."""
    with _serving(_PageServer(port, shop, customer_id, tierdesk, token_key)) as url:
        yield url + "/"
