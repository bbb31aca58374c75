"""The order-system contract the chat service depends on.

Two implementations live in ``backends.py``: the demo shop's own tables and an HTTP
client for a shop's real API (docs/order-api.md). Which one serves is the
``ORDER_SERVICE`` setting; ``get_order_service()`` returns it.

Privacy rule, enforced by every implementation: each read or write takes the
verified ``customer_id``, and an order that belongs to someone else is reported
exactly like an order that does not exist (``None`` / ``OrderNotFound``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Protocol


class OrderServiceError(RuntimeError):
    """The order system failed or refused; ``code`` is stable (docs/protocol.md)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class OrderNotFound(OrderServiceError):
    def __init__(self, order_id: str) -> None:
        super().__init__("order_not_found", f"no order {order_id} for this shopper")


class OrderNotAllowed(OrderServiceError):
    """The action is not allowed in the order's current status."""


@dataclass(frozen=True)
class Customer:
    customer_id: str
    first_name: str
    last_name: str
    email: str
    zip: str
    vip: bool = False


@dataclass(frozen=True)
class Address:
    address1: str
    address2: str
    city: str
    state: str
    zip: str
    country: str = "USA"

    def one_line(self) -> str:
        """ "12 Oak St, Austin, TX 73301"; with no state "10 High Street, Leeds, LS1 4AB"."""
        region = " ".join(p for p in (self.state, self.zip) if p)
        return ", ".join(p for p in (self.address1, self.address2, self.city, region) if p)


@dataclass(frozen=True)
class OrderItem:
    item_id: str
    name: str
    price: Decimal
    options: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class OrderFacts:
    order_id: str  # canonical, in the shop's form (shop profile): "#1001"
    status: str  # pending | processed | delivered | cancelled
    items: tuple[OrderItem, ...]
    total: Decimal
    address: Address
    placed_on: date
    estimated_delivery: date | None
    carrier: str  # "" until shipped
    tracking_ids: tuple[str, ...]
    refunds: tuple[Decimal, ...]  # refund amounts already issued
    payment_method: str  # "credit_card", "gift_card", "paypal" ...


@dataclass(frozen=True)
class ReturnItem:
    """One item going back; for an exchange, also the item it is swapped for."""

    item_id: str
    name: str
    price: Decimal
    options: dict[str, str] = field(default_factory=dict)
    new_item_id: str = ""
    new_options: dict[str, str] = field(default_factory=dict)
    new_price: Decimal | None = None


@dataclass(frozen=True)
class ReturnFacts:
    """A requested return or exchange (``request_return`` / ``request_exchange``)."""

    order_id: str
    kind: str  # return | exchange
    status: str  # requested | received | completed | rejected
    items: tuple[ReturnItem, ...]
    # Return: the refund. Exchange: the price difference (> 0: the shopper pays).
    amount: Decimal
    payment_method: str  # where the refund goes / what pays the difference
    # False when this exact request had already been made (a repeated "yes"): nothing
    # new was stored.
    created: bool = True


@dataclass(frozen=True)
class ShippingOption:
    name: str
    price: Decimal
    days_min: int
    days_max: int
    free_over: Decimal | None


class OrderService(Protocol):
    def customer_by_id(self, *, customer_id: str) -> Customer | None: ...

    def customer_by_email(self, *, email: str) -> Customer | None: ...

    def customer_by_name_zip(
        self, *, first_name: str, last_name: str, zip: str
    ) -> Customer | None: ...

    def customers_in_zip(self, *, zip: str) -> list[Customer]: ...

    def order_get(self, *, customer_id: str, order_id: str) -> OrderFacts | None: ...

    def orders_for_customer(self, *, customer_id: str) -> list[OrderFacts]: ...

    def order_cancel(self, *, customer_id: str, order_id: str, reason: str) -> OrderFacts: ...

    def order_change_address(
        self, *, customer_id: str, order_id: str, address: Address
    ) -> OrderFacts: ...

    def shipping_options(self) -> list[ShippingOption]: ...

    def item_variants(self, *, item_id: str) -> list[OrderItem]:
        """Available items of the same product as ``item_id`` in other options."""
        ...

    def request_return(
        self, *, customer_id: str, order_id: str, item_ids: list[str]
    ) -> ReturnFacts: ...

    def request_exchange(
        self, *, customer_id: str, order_id: str, exchanges: dict[str, str]
    ) -> ReturnFacts:
        """``exchanges`` maps each item id going back to the item id it is swapped for."""
        ...
