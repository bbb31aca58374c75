"""The demo shop's tables: the order system the L1 tier reads its facts from.

A real shop keeps these in its own system and Tierdesk talks to it over HTTP
(``HttpOrderService``, docs/order-api.md). The JSON columns keep the tau-bench retail
shapes as they are (third_party/tau_bench_retail/), so the demo data loads without
translation and a reseed can be compared with the source file.
"""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Lower


class Customer(models.Model):
    customer_id = models.CharField(max_length=64, unique=True)  # "james_li_5688"
    first_name = models.CharField(max_length=64)
    last_name = models.CharField(max_length=64)
    # Stored lower-case (seed and services normalise it) so the lookup is a plain
    # equality on an indexed column; the constraint keeps two customers from sharing
    # an address that in-chat verification would then have to disambiguate.
    email = models.EmailField(max_length=254, db_index=True)
    zip = models.CharField(max_length=10, db_index=True)
    address = models.JSONField(default=dict)  # tau-bench address object
    payment_methods = models.JSONField(default=dict)  # {id: {"source": ..., ...}}
    vip = models.BooleanField(default=False)

    class Meta:
        ordering = ["customer_id"]
        constraints = [
            models.UniqueConstraint(Lower("email"), name="orders_customer_email_ci_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.first_name} {self.last_name} ({self.customer_id})"


class Order(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        PROCESSED = "processed", "processed"
        DELIVERED = "delivered", "delivered"
        CANCELLED = "cancelled", "cancelled"
        # After a confirmed return or exchange (store policy, wiki.md): the shopper is
        # emailed how to send the items back; the ReturnRequest holds the details.
        RETURN_REQUESTED = "return requested", "return requested"
        EXCHANGE_REQUESTED = "exchange requested", "exchange requested"

    order_id = models.CharField(max_length=16, unique=True)  # in the shop's form (shop profile)
    customer = models.ForeignKey(Customer, on_delete=models.PROTECT, related_name="orders")
    status = models.CharField(max_length=24, choices=Status.choices, db_index=True)
    address = models.JSONField(default=dict)
    items = models.JSONField(default=list)  # [{"item_id", "name", "price", "options", ...}]
    fulfillments = models.JSONField(default=list)  # [{"tracking_id": [...], "item_ids": [...]}]
    # [{"transaction_type": "payment"|"refund", "amount", "payment_method_id"}]
    payment_history = models.JSONField(default=list)
    # The source data has no dates and no carriers: seed.py derives these from a hash
    # of the order id (see seed.order_derived_fields).
    placed_on = models.DateField()
    estimated_delivery = models.DateField(null=True, blank=True)
    carrier = models.CharField(max_length=16, blank=True)
    cancel_reason = models.CharField(max_length=200, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-placed_on", "order_id"]

    def __str__(self) -> str:
        return self.order_id


class Product(models.Model):
    product_id = models.CharField(max_length=32, unique=True)
    name = models.CharField(max_length=128)
    variants = models.JSONField(default=dict)  # {item_id: {"options", "available", "price"}}

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ShippingOption(models.Model):
    name = models.CharField(max_length=64, unique=True)
    price = models.DecimalField(max_digits=8, decimal_places=2)
    days_min = models.PositiveSmallIntegerField()
    days_max = models.PositiveSmallIntegerField()
    # Orders at or above this subtotal ship free with this option; null = never free.
    free_over = models.DecimalField(max_digits=8, decimal_places=2, null=True, blank=True)
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["position", "price"]

    def __str__(self) -> str:
        return self.name


class ReturnRequest(models.Model):
    """A return or exchange of a delivered order's items, requested by the shopper in
    the chat after an explicit "yes" (services.request_return / request_exchange).

    One per order: the store policy moves the order to "return requested" or
    "exchange requested", after which nothing more can be returned or exchanged from
    it. ``items`` lists what goes back: ``{"item_id", "name", "price", "options"}``,
    and for an exchange also ``"new_item_id"``, ``"new_options"``, ``"new_price"``.
    """

    class Kind(models.TextChoices):
        RETURN = "return", "return"
        EXCHANGE = "exchange", "exchange"

    class Status(models.TextChoices):
        # Requested in the chat; the shop emails the instructions and the label.
        REQUESTED = "requested", "requested"
        RECEIVED = "received", "items received"
        COMPLETED = "completed", "completed"
        REJECTED = "rejected", "rejected"

    order = models.OneToOneField(Order, on_delete=models.PROTECT, related_name="return_request")
    customer = models.ForeignKey(Customer, on_delete=models.PROTECT, related_name="return_requests")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.REQUESTED, db_index=True
    )
    items = models.JSONField(default=list)
    # Return: what is refunded. Exchange: the price difference, positive when the
    # shopper pays, negative when they get money back.
    amount = models.DecimalField(max_digits=10, decimal_places=2)
    payment_method_id = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.kind} of {self.order.order_id} ({self.status})"
