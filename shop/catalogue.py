"""The catalogue as typed values: the one place L3 grounding (and anything else that
quotes products) reads products, options and prices from. Blocking (ORM)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Q
from django.db.models.functions import Lower

from .models import Product

# A single letter would match nearly every product name; two keeps names like "TV".
MIN_NAME_WORD = 2


@dataclass(frozen=True)
class VariantFacts:
    sku: str
    options: dict[str, str]
    price: Decimal  # in the shop's currency (shop profile)
    available: bool


@dataclass(frozen=True)
class ProductFacts:
    product_id: str
    name: str
    category: str
    description: str
    variants: tuple[VariantFacts, ...]


def catalogue_products(
    *, name_words: Iterable[str] | None = None, limit: int | None = None
) -> list[ProductFacts]:
    """Every product with its variants, by name; with ``name_words``, only products
    whose name contains one of them (case-insensitive), so a turn reads the few
    products a question may name, not a catalogue of thousands; with ``limit``, the
    first ``limit`` of them."""
    rows = Product.objects.prefetch_related("variants")
    if name_words is not None:
        words = {w for w in name_words if len(w) >= MIN_NAME_WORD}
        if not words:
            return []
        match = Q()
        for word in words:
            match |= Q(name__icontains=word)
        rows = rows.filter(match)
    if limit is not None:
        rows = rows[:limit]
    return [
        ProductFacts(
            product_id=p.product_id,
            name=p.name,
            category=p.category,
            description=p.description,
            variants=tuple(
                VariantFacts(
                    sku=v.sku,
                    options={str(k): str(val) for k, val in (v.options or {}).items()},
                    price=v.price,
                    available=v.available,
                )
                for v in p.variants.all()
            ),
        )
        for p in rows
    ]


def profile_category(product_name: str) -> str:
    """The category the shop profile's return policy puts a product in by its name
    (``product_categories``), "" when it names none: what the demo's products, which
    carry no category of their own, are imported with."""
    from .profile import shop_profile
    from .values import DEFAULT_CATEGORY

    category = shop_profile().returns.category(product_name)
    return "" if category == DEFAULT_CATEGORY else category


def categories_by_name(names: Iterable[str]) -> dict[str, str]:
    """The catalogue's category of each of these product names that it lists with one,
    keyed by the name casefolded (the return policy's lookup, chatbot/orders/policy.py)."""
    wanted = {name.strip().casefold() for name in names if name.strip()}
    if not wanted:
        return {}
    rows = (
        Product.objects.exclude(category="")
        .annotate(folded=Lower("name"))
        .filter(folded__in=wanted)
        .values_list("folded", "category")
    )
    return {folded.casefold(): category for folded, category in rows}
