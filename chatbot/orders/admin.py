"""Read-mostly admin for the demo shop.

Support admins look orders up (by order id, email or customer id) while reading a
conversation. Changes to orders go through the services (cancel, change address,
return, exchange) so that refunds are recorded; the admin therefore only lets them correct delivery
facts, and never add or delete shop records.

The demo order system's own product table (models.Product: what an exchange checks,
as a real shop's system would) is not shown: the catalogue the bot quotes is the
shop's, edited and imported under Shop › Products (shop/admin_catalogue.py).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from . import models


class _NoAddDelete:
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class OrderInline(admin.TabularInline):
    model = models.Order
    fields = ("order_id", "status", "placed_on", "estimated_delivery", "carrier")
    readonly_fields = fields
    extra = 0
    show_change_link = True
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(models.Customer)
class CustomerAdmin(_NoAddDelete, admin.ModelAdmin):
    list_display = ("customer_id", "first_name", "last_name", "email", "zip", "vip")
    list_filter = ("vip",)
    search_fields = ("customer_id", "email", "first_name", "last_name", "zip")
    readonly_fields = (
        "customer_id",
        "first_name",
        "last_name",
        "email",
        "zip",
        "address",
        "payment_methods",
    )
    inlines = [OrderInline]


@admin.register(models.Order)
class OrderAdmin(_NoAddDelete, admin.ModelAdmin):
    list_display = ("order_id", "customer", "status", "placed_on", "estimated_delivery", "carrier")
    list_filter = ("status", "carrier")
    list_select_related = ("customer",)
    # icontains on order_id: the id typed without its "#" still finds it.
    search_fields = ("order_id", "customer__email", "customer__customer_id")
    date_hierarchy = "placed_on"
    readonly_fields = (
        "order_id",
        "customer",
        "status",
        "address",
        "items",
        "fulfillments",
        "payment_history",
        "placed_on",
        "cancel_reason",
        "updated_at",
    )


@admin.register(models.ReturnRequest)
class ReturnRequestAdmin(_NoAddDelete, admin.ModelAdmin):
    """Returns and exchanges requested in the chat. Support admins follow them up:
    only the status changes here (items received, completed, rejected)."""

    list_display = ("order", "kind", "status", "amount", "customer", "created_at")
    list_filter = ("kind", "status")
    list_select_related = ("order", "customer")
    search_fields = ("order__order_id", "customer__email", "customer__customer_id")
    readonly_fields = (
        "order",
        "customer",
        "kind",
        "items",
        "amount",
        "payment_method_id",
        "created_at",
        "updated_at",
    )


@admin.register(models.ShippingOption)
class ShippingOptionAdmin(admin.ModelAdmin):
    # Shipping prices are the shop's to set: fully editable.
    list_display = ("name", "price", "days_min", "days_max", "free_over", "position")
    list_editable = ("price", "days_min", "days_max", "free_over", "position")
