"""The demo shop's tables: the order system the L1 tier reads its facts from.

A real shop keeps these in its own system and Tierdesk talks to it over HTTP
(``HttpOrderService``, docs/order-api.md). The JSON columns keep the tau-bench retail
shapes as they are (third_party/tau_bench_retail/), so the demo data loads without
translation and a reseed can be compared with the source file.
"""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Lower
from django.utils.translation import gettext_lazy as _


class Customer(models.Model):
    customer_id = models.CharField(
        max_length=64, unique=True, verbose_name=_("customer id")
    )  # "james_li_5688"
    first_name = models.CharField(max_length=64, verbose_name=_("first name"))
    last_name = models.CharField(max_length=64, verbose_name=_("last name"))
    # Stored lower-case (seed and services normalise it) so the lookup is a plain
    # equality on an indexed column; the constraint keeps two customers from sharing
    # an address that in-chat verification would then have to disambiguate.
    email = models.EmailField(max_length=254, db_index=True, verbose_name=_("email"))
    zip = models.CharField(max_length=10, db_index=True, verbose_name=_("zip"))
    address = models.JSONField(default=dict, verbose_name=_("address"))  # tau-bench address object
    payment_methods = models.JSONField(
        default=dict, verbose_name=_("payment methods")
    )  # {id: {"source": ..., ...}}
    vip = models.BooleanField(default=False, verbose_name=_("vip"))

    class Meta:
        verbose_name = _("customer")
        verbose_name_plural = _("customers")
        ordering = ["customer_id"]
        constraints = [
            models.UniqueConstraint(Lower("email"), name="orders_customer_email_ci_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.first_name} {self.last_name} ({self.customer_id})"


class Order(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", _("pending")
        PROCESSED = "processed", _("processed")
        DELIVERED = "delivered", _("delivered")
        CANCELLED = "cancelled", _("cancelled")
        # After a confirmed return or exchange (store policy, wiki.md): the shopper is
        # emailed how to send the items back; the ReturnRequest holds the details.
        RETURN_REQUESTED = "return requested", _("return requested")
        EXCHANGE_REQUESTED = "exchange requested", _("exchange requested")

    order_id = models.CharField(
        max_length=16, unique=True, verbose_name=_("order id")
    )  # in the shop's form (shop profile)
    customer = models.ForeignKey(
        Customer, on_delete=models.PROTECT, related_name="orders", verbose_name=_("customer")
    )
    status = models.CharField(
        max_length=24, choices=Status.choices, db_index=True, verbose_name=_("status")
    )
    address = models.JSONField(default=dict, verbose_name=_("address"))
    items = models.JSONField(
        default=list, verbose_name=_("items")
    )  # [{"item_id", "name", "price", "options", ...}]
    fulfillments = models.JSONField(
        default=list, verbose_name=_("fulfillments")
    )  # [{"tracking_id": [...], "item_ids": [...]}]
    # [{"transaction_type": "payment"|"refund", "amount", "payment_method_id"}]
    payment_history = models.JSONField(default=list, verbose_name=_("payment history"))
    # The source data has no dates and no carriers: seed.py derives these from a hash
    # of the order id (see seed.order_derived_fields).
    placed_on = models.DateField(verbose_name=_("placed on"))
    estimated_delivery = models.DateField(
        null=True, blank=True, verbose_name=_("estimated delivery")
    )
    carrier = models.CharField(max_length=16, blank=True, verbose_name=_("carrier"))
    cancel_reason = models.CharField(max_length=200, blank=True, verbose_name=_("cancel reason"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("order")
        verbose_name_plural = _("orders")
        ordering = ["-placed_on", "order_id"]

    def __str__(self) -> str:
        return self.order_id


class Product(models.Model):
    product_id = models.CharField(max_length=32, unique=True, verbose_name=_("product id"))
    name = models.CharField(max_length=128, verbose_name=_("name"))
    variants = models.JSONField(
        default=dict, verbose_name=_("variants")
    )  # {item_id: {"options", "available", "price"}}

    class Meta:
        verbose_name = _("product")
        verbose_name_plural = _("products")
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ShippingOption(models.Model):
    name = models.CharField(max_length=64, unique=True, verbose_name=_("name"))
    price = models.DecimalField(max_digits=8, decimal_places=2, verbose_name=_("price"))
    days_min = models.PositiveSmallIntegerField(verbose_name=_("days min"))
    days_max = models.PositiveSmallIntegerField(verbose_name=_("days max"))
    # Orders at or above this subtotal ship free with this option; null = never free.
    free_over = models.DecimalField(
        max_digits=8, decimal_places=2, null=True, blank=True, verbose_name=_("free over")
    )
    position = models.PositiveSmallIntegerField(default=0, verbose_name=_("position"))

    class Meta:
        verbose_name = _("shipping option")
        verbose_name_plural = _("shipping options")
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
        RETURN = "return", _("return")
        EXCHANGE = "exchange", _("exchange")

    class Status(models.TextChoices):
        # Requested in the chat; the shop emails the instructions and the label.
        REQUESTED = "requested", _("requested")
        RECEIVED = "received", _("items received")
        COMPLETED = "completed", _("completed")
        REJECTED = "rejected", _("rejected")

    order = models.OneToOneField(
        Order, on_delete=models.PROTECT, related_name="return_request", verbose_name=_("order")
    )
    customer = models.ForeignKey(
        Customer,
        on_delete=models.PROTECT,
        related_name="return_requests",
        verbose_name=_("customer"),
    )
    kind = models.CharField(max_length=16, choices=Kind.choices, verbose_name=_("kind"))
    status = models.CharField(
        max_length=16,
        choices=Status.choices,
        default=Status.REQUESTED,
        db_index=True,
        verbose_name=_("status"),
    )
    items = models.JSONField(default=list, verbose_name=_("items"))
    # Return: what is refunded. Exchange: the price difference, positive when the
    # shopper pays, negative when they get money back.
    amount = models.DecimalField(max_digits=10, decimal_places=2, verbose_name=_("amount"))
    payment_method_id = models.CharField(
        max_length=64, blank=True, verbose_name=_("payment method id")
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("return request")
        verbose_name_plural = _("return requests")
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.kind} of {self.order.order_id} ({self.status})"
