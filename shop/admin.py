"""The shop profile in the admin: one row, validated by ShopProfile.clean (every spec
and policy value parsed, each error on its field). The catalogue: admin_catalogue.py."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest, HttpResponseRedirect
from django.urls import reverse

# admin_catalogue registers the catalogue's admin (products, variants, the import page).
from . import admin_catalogue  # noqa: F401
from .models import SINGLETON_PK, ShopProfile


@admin.register(ShopProfile)
class ShopProfileAdmin(admin.ModelAdmin):
    fieldsets = (
        ("Orders and addresses", {"fields": ("order_id_formats", "postcode_formats", "country")}),
        ("Currency", {"fields": ("currency_code", "currency_symbol")}),
        (
            "Returns and exchanges",
            {
                "fields": (
                    "default_membership",
                    "return_window_days",
                    "product_categories",
                    "category_return_window_days",
                    "return_conditions",
                    "restocking_fee_percent",
                    "return_shipping",
                    "refund_timing",
                )
            },
        ),
    )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return not ShopProfile.objects.exists() and super().has_add_permission(request)

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def changelist_view(
        self, request: HttpRequest, extra_context: dict | None = None
    ) -> HttpResponseRedirect:
        """The list of one row is a detour: open the row (or the add form)."""
        if ShopProfile.objects.filter(pk=SINGLETON_PK).exists():
            url = reverse("admin:shop_shopprofile_change", args=[SINGLETON_PK])
        else:
            url = reverse("admin:shop_shopprofile_add")
        return HttpResponseRedirect(url)
