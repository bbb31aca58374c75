"""Write parsed catalogue records (shop/catalogue_schema.py) into the catalogue tables.

All or nothing: a file with any error changes nothing, and the caller shows every
error with its line and field. A clean file goes in in one transaction, matched by
SKU (and product id), so importing the same file twice changes nothing the second
time. ``prune`` (the HTTP sync, or ``import_catalogue --prune``) also removes the
variants and products the file no longer lists: the shop's system is then the whole
truth; without it, rows the file does not mention are left as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction

from .catalogue_schema import Parsed, RowError, catalogue_parse, json_parse
from .models import Product, ProductVariant
from .profile import shop_profile


@dataclass
class ImportResult:
    errors: list[RowError] = field(default_factory=list)
    products_created: int = 0
    products_updated: int = 0
    variants_created: int = 0
    variants_updated: int = 0
    unchanged: int = 0  # variants already exactly as given
    variants_removed: int = 0
    products_removed: int = 0

    @property
    def ok(self) -> bool:
        return not self.errors

    def counts(self) -> dict[str, int]:
        return {
            "products_created": self.products_created,
            "products_updated": self.products_updated,
            "variants_created": self.variants_created,
            "variants_updated": self.variants_updated,
            "unchanged": self.unchanged,
            "variants_removed": self.variants_removed,
            "products_removed": self.products_removed,
        }


def catalogue_import_file(data: bytes, *, filename: str, prune: bool = False) -> ImportResult:
    """A CSV or JSON file's bytes into the catalogue (module docstring). Blocking."""
    parsed = catalogue_parse(data, filename=filename, shop_currency=shop_profile().currency_code)
    return catalogue_apply(parsed, prune=prune)


def catalogue_import_json(document: object, *, prune: bool = False) -> ImportResult:
    """An already-decoded JSON document (the HTTP sync's pages, the demo seed)."""
    parsed = json_parse(document, shop_currency=shop_profile().currency_code)
    return catalogue_apply(parsed, prune=prune)


def catalogue_apply(parsed: Parsed, *, prune: bool = False) -> ImportResult:
    result = ImportResult(errors=list(parsed.errors))
    if result.errors:
        return result
    with transaction.atomic():
        products = {p.product_id: p for p in Product.objects.select_for_update()}
        variants = {v.sku: v for v in ProductVariant.objects.select_for_update()}
        seen_products: set[str] = set()
        seen_skus: set[str] = set()
        for record in parsed.products:
            product = products.get(record.product_id)
            fields = {
                "name": record.name,
                "category": record.category,
                "description": record.description,
            }
            if product is None:
                product = Product.objects.create(product_id=record.product_id, **fields)
                products[record.product_id] = product
                result.products_created += 1
            elif any(getattr(product, k) != v for k, v in fields.items()):
                for key, value in fields.items():
                    setattr(product, key, value)
                product.save()
                result.products_updated += 1
            seen_products.add(record.product_id)
            for rec in record.variants:
                seen_skus.add(rec.sku)
                variant = variants.get(rec.sku)
                if variant is None:
                    ProductVariant.objects.create(
                        sku=rec.sku,
                        product=product,
                        options=rec.options,
                        price=rec.price,
                        available=rec.available,
                    )
                    result.variants_created += 1
                elif (variant.product_id, variant.options, variant.price, variant.available) != (
                    product.pk,
                    rec.options,
                    rec.price,
                    rec.available,
                ):
                    variant.product = product
                    variant.options = rec.options
                    variant.price = rec.price
                    variant.available = rec.available
                    variant.save()
                    result.variants_updated += 1
                else:
                    result.unchanged += 1
        if prune:
            result.variants_removed = ProductVariant.objects.exclude(sku__in=seen_skus).delete()[0]
            result.products_removed = (
                Product.objects.exclude(product_id__in=seen_products)
                .delete()[1]
                .get(Product._meta.label, 0)
            )
    return result
