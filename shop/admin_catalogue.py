"""The catalogue in the admin: products with their variants, editable, and the CSV/JSON
import page (shop/catalogue_import.py: all or nothing, every error with its line and
field)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db import models
from django.db.models import Count, Max, Min, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.translation import gettext_lazy as _

from .models import Product, ProductVariant
from .profile import shop_profile

# An upload larger than this is refused before it is read: a catalogue of tens of
# thousands of SKUs is a few MB; anything bigger belongs in the HTTP sync.
MAX_UPLOAD_BYTES = 20 * 1024 * 1024

# The import's counts as the success message names them (ImportResult.counts()).
TOTAL_LABELS = {
    "products_created": _("products created"),
    "products_updated": _("products updated"),
    "variants_created": _("variants created"),
    "variants_updated": _("variants updated"),
    "unchanged": _("unchanged"),
    "variants_removed": _("variants removed"),
    "products_removed": _("products removed"),
}


class CatalogueImportForm(forms.Form):
    file = forms.FileField(label=_("CSV or JSON file"))
    prune = forms.BooleanField(
        required=False,
        label=_("Remove what the file does not list"),
        help_text=_("Products and variants not in the file are deleted."),
    )

    def clean_file(self) -> Any:
        upload = self.cleaned_data["file"]
        if not upload.name.lower().endswith((".csv", ".json")):
            raise forms.ValidationError(_("Upload a .csv or .json file."))
        if upload.size > MAX_UPLOAD_BYTES:
            raise forms.ValidationError(
                _("The file is larger than %(mb)d MB.") % {"mb": MAX_UPLOAD_BYTES // 2**20}
            )
        return upload


class VariantInline(admin.TabularInline):
    model = ProductVariant
    fields = ("sku", "options", "price", "available")
    extra = 0
    # Options are one short object a row: the default ten-line box made each row tall.
    formfield_overrides = {
        models.JSONField: {"widget": forms.Textarea(attrs={"rows": 2, "cols": 48})},
    }


@admin.register(Product)
class ProductAdmin(admin.ModelAdmin):
    list_display = ("name", "product_id", "category", "variant_count", "price_range")
    list_filter = ("category",)
    search_fields = ("name", "product_id", "category", "variants__sku")
    inlines = [VariantInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Product]:
        return (
            super()
            .get_queryset(request)
            .annotate(
                _variants=Count("variants"),
                _low=Min("variants__price"),
                _high=Max("variants__price"),
            )
        )

    @admin.display(description=_("variants"), ordering="_variants")
    def variant_count(self, obj: Any) -> int:
        return int(obj._variants)

    @admin.display(description=_("price"), ordering="_low")
    def price_range(self, obj: Any) -> str:
        if obj._low is None:
            return "-"
        symbol = shop_profile().currency_symbol
        if obj._low == obj._high:
            return f"{symbol}{obj._low}"
        return f"{symbol}{obj._low} – {symbol}{obj._high}"

    def get_urls(self) -> list[Any]:
        return [
            path(
                "import/",
                self.admin_site.admin_view(self.import_view),
                name="shop_product_import",
            ),
            *super().get_urls(),
        ]

    def import_view(self, request: HttpRequest) -> HttpResponse:
        """Upload -> imported, or every error and nothing changed."""
        from .catalogue_import import ImportResult, catalogue_import_file

        if not (self.has_add_permission(request) and self.has_change_permission(request)):
            return HttpResponse(status=403)
        form = CatalogueImportForm(request.POST or None, request.FILES or None)
        result: ImportResult | None = None
        filename = ""
        if request.method == "POST" and form.is_valid():
            upload = form.cleaned_data["file"]
            filename = upload.name
            result = catalogue_import_file(
                upload.read(), filename=filename, prune=form.cleaned_data["prune"]
            )
            if result.ok:
                totals = ", ".join(
                    f"{TOTAL_LABELS[k]} {v}" for k, v in result.counts().items() if v
                )
                messages.success(
                    request,
                    _("Imported %(file)s: %(totals)s.")
                    % {"file": filename, "totals": totals or _("nothing changed")},
                )
                return HttpResponseRedirect(reverse("admin:shop_product_changelist"))
        profile = shop_profile()
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": _("Import the catalogue"),
            "form": form,
            "result": result,
            "filename": filename,
            "currency": f"{profile.currency_code} ({profile.currency_symbol})",
        }
        return TemplateResponse(request, "admin/shop/product/import.html", context)
