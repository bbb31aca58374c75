"""The shop's own data: the one ShopProfile row, and the catalogue (Product, ProductVariant).

Support admins edit both in the admin. shop/profile.py reads the profile (cached) and
every flow, template and check asks that service, never the model; shop/catalogue.py
is the one reader of the catalogue, and shop/catalogue_import.py its one writer apart
from the admin's forms."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

SINGLETON_PK = 1


class ShopProfile(models.Model):
    order_id_formats = models.TextField(
        help_text="One form per line: a prefix and a digit count in braces. #W{7} is #W and "
        "seven digits, #{3-6} is # and three to six digits (Shopify), {9} is nine digits "
        "(Magento), {4-8} is four to eight digits (WooCommerce). The first is the form "
        "replies show in examples."
    )
    postcode_formats = models.TextField(
        help_text="One per line: us_zip, uk_postcode, ca_postal_code, digits_4, digits_6 or "
        "generic. In-chat verification finds the postcode in these formats."
    )
    country = models.CharField(max_length=2, help_text="ISO 3166 code, e.g. US, GB.")
    currency_code = models.CharField(max_length=3, help_text="ISO 4217 code, e.g. USD.")
    currency_symbol = models.CharField(max_length=4, help_text="e.g. $, £, €.")
    default_membership = models.CharField(
        max_length=32,
        help_text="The membership level of a shopper the order system gives none; a key of "
        "the return windows.",
    )
    return_window_days = models.JSONField(
        default=dict,
        help_text='Days from purchase by membership level, null for "any time", e.g. '
        '{"guest": 30, "silver": 183, "gold": null}.',
    )
    product_categories = models.JSONField(
        default=dict,
        blank=True,
        help_text='Product names by category, e.g. {"apparel": ["T-Shirt", "Sneakers"]}. '
        'A product named nowhere is in the category "default".',
    )
    category_return_window_days = models.JSONField(
        default=dict,
        blank=True,
        help_text="A category's own window in days (0: not returnable), shorter windows win, "
        'e.g. {"final sale": 0}.',
    )
    return_conditions = models.JSONField(
        default=dict,
        help_text="The conditions replies quote, by category, in English and Chinese; "
        '"default" is required, e.g. {"default": {"en": "items must be unused", "zh": '
        '"商品须未使用"}}.',
    )
    restocking_fee_percent = models.DecimalField(
        max_digits=5,
        decimal_places=2,
        default=Decimal("0"),
        help_text="Percent of the item price kept from a refund; 0 for none.",
    )
    refund_timing = models.JSONField(
        default=dict,
        help_text="When a refund reaches the shopper, by payment method (credit_card, "
        'gift_card, paypal; "default" for the rest, required), in English and Chinese, as '
        'replies quote it: e.g. {"default": {"en": "within 3 to 5 working days", "zh": '
        '"3到5个工作日内"}}.',
    )
    return_shipping = models.JSONField(
        default=dict,
        blank=True,
        help_text="The sentence the return and exchange confirmations say about sending "
        'items back, in English and Chinese, e.g. {"en": "Postage for returns is paid by '
        'you.", "zh": "退货运费由您承担。"}; {} says nothing.',
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = _("shop profile")
        verbose_name_plural = _("shop profile")

    def __str__(self) -> str:
        return f"Shop profile ({self.country}, {self.currency_code})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.pk = SINGLETON_PK  # one row: a second save edits it
        super().save(*args, **kwargs)

    def clean(self) -> None:
        from .values import ProfileError, profile_parse

        try:
            profile_parse(self.values())
        except ProfileError as error:
            raise ValidationError({error.field: error.message}) from error

    def values(self) -> dict[str, Any]:
        return {
            f.name: getattr(self, f.name)
            for f in self._meta.concrete_fields
            if f.name not in ("id", "updated_at")
        }


class Product(models.Model):
    """A product of the shop's catalogue, as imported (CSV/JSON), synced from the shop's
    HTTP API or edited here. L3 answers from these rows (shop/catalogue.py)."""

    product_id = models.CharField(max_length=64, unique=True, verbose_name=_("product id"))
    name = models.CharField(max_length=128, verbose_name=_("name"))
    category = models.CharField(max_length=64, blank=True, verbose_name=_("category"))
    description = models.TextField(blank=True, verbose_name=_("description"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("product")
        verbose_name_plural = _("products")
        ordering = ["name", "product_id"]

    def __str__(self) -> str:
        return self.name


class ProductVariant(models.Model):
    """One option set of a product, sold under its own SKU (the order system's item id).
    Prices are in the shop's currency (shop profile)."""

    product = models.ForeignKey(
        Product, on_delete=models.CASCADE, related_name="variants", verbose_name=_("product")
    )
    sku = models.CharField(max_length=64, unique=True, verbose_name=_("SKU"))
    options = models.JSONField(
        default=dict,
        blank=True,
        verbose_name=_("options"),
        help_text=_('e.g. {"color": "navy", "size": "large"}'),
    )
    price = models.DecimalField(
        max_digits=10,
        decimal_places=2,
        validators=[MinValueValidator(Decimal("0"))],
        verbose_name=_("price"),
    )
    available = models.BooleanField(default=True, verbose_name=_("available"))

    class Meta:
        verbose_name = _("variant")
        verbose_name_plural = _("variants")
        ordering = ["product", "price", "sku"]

    def __str__(self) -> str:
        return self.sku

    def clean(self) -> None:
        from .catalogue_schema import options_check

        message = options_check(self.options)
        if message:
            raise ValidationError({"options": message})
