"""The catalogue's import formats (docs/catalogue.md), read into typed records.

Two shapes carry the same fields:

- CSV, one row per SKU: ``sku, product_id, name, category, price, currency, options,
  available, description``; rows sharing a ``product_id`` are that product's variants.
- JSON (a file, or a page of the shop's HTTP API, docs/order-api.md):
  ``{"products": [{"product_id", "name", "category", "description",
  "variants": [{"sku", "options", "price", "currency", "available"}]}]}``.

Every problem is reported with where it is (CSV line, or JSON path) and the field,
and parsing goes on to the end, so one pass lists every row to fix. Nothing here
touches the database: shop/catalogue_import.py writes what parsed cleanly.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from django.utils.translation import gettext as _

CSV_COLUMNS = (
    "sku",
    "product_id",
    "name",
    "category",
    "price",
    "currency",
    "options",
    "available",
    "description",
)
CSV_REQUIRED = ("sku", "name", "price")
# Longest field values (the model's column sizes).
_MAX = {"sku": 64, "product_id": 64, "name": 128, "category": 64, "description": 4000}
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/-]*$")
_TRUE = {"true", "yes", "y", "1", "available", "in stock", "in_stock"}
_FALSE = {"false", "no", "n", "0", "sold out", "sold_out", "out of stock", "unavailable"}
_MAX_PRICE = Decimal("99999999.99")
# Stop listing after this many problems: a file in the wrong shape would list every row.
MAX_ERRORS = 200


@dataclass(frozen=True)
class RowError:
    where: str  # "line 4" (CSV) or "products[2].variants[0]" (JSON)
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}, {self.field}: {self.message}"


@dataclass(frozen=True)
class VariantRecord:
    sku: str
    options: dict[str, str]
    price: Decimal
    available: bool


@dataclass
class ProductRecord:
    product_id: str
    name: str
    category: str
    description: str
    variants: list[VariantRecord] = field(default_factory=list)
    where: str = ""  # where the product was first seen, for the consistency errors


@dataclass
class Parsed:
    products: list[ProductRecord] = field(default_factory=list)
    errors: list[RowError] = field(default_factory=list)

    @property
    def variant_count(self) -> int:
        return sum(len(p.variants) for p in self.products)


def _line(number: int) -> str:
    return _("line %(n)d") % {"n": number}


class _Errors:
    def __init__(self, errors: list[RowError]) -> None:
        self.errors = errors

    def add(self, where: str, field_name: str, message: str) -> None:
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(RowError(where, field_name, message))


def options_check(options: Any) -> str:
    """Why ``options`` is not a flat {name: value} object of texts, or ""."""
    if not isinstance(options, dict):
        return _('must be an object of option names and values, e.g. {"color": "navy"}')
    for key, value in options.items():
        if not isinstance(key, str) or not key.strip():
            return _("an option name is empty")
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            return _("option %(name)s must have a text value") % {"name": repr(key)}
    return ""


def _text(value: Any, name: str, where: str, errors: _Errors, *, required: bool = False) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        errors.add(where, name, _("must be text"))
        return ""
    value = value.strip()
    if required and not value:
        errors.add(where, name, _("is required"))
    elif len(value) > _MAX[name]:
        errors.add(where, name, _("is longer than %(n)d characters") % {"n": _MAX[name]})
    elif name in ("sku", "product_id") and value and not _ID.match(value):
        errors.add(
            where,
            name,
            _("%(value)s: use letters, digits and . _ - : / only, no spaces")
            % {"value": repr(value)},
        )
    return value


def _price(value: Any, where: str, errors: _Errors) -> Decimal | None:
    if isinstance(value, bool) or value is None or value == "":
        errors.add(where, "price", _("is required"))
        return None
    try:
        price = Decimal(str(value).strip())
    except InvalidOperation:
        errors.add(
            where,
            "price",
            _("%(value)s is not a number (write 19.99, no symbol)") % {"value": repr(value)},
        )
        return None
    if not price.is_finite() or price < 0 or price > _MAX_PRICE:
        errors.add(
            where,
            "price",
            _("%(value)s must be between 0 and %(max)s")
            % {"value": repr(value), "max": _MAX_PRICE},
        )
        return None
    if price != price.quantize(Decimal("0.01")):
        errors.add(
            where, "price", _("%(value)s has more than two decimal places") % {"value": repr(value)}
        )
        return None
    return price.quantize(Decimal("0.01"))


def _currency(value: Any, shop_currency: str, where: str, errors: _Errors) -> None:
    code = str(value or "").strip().upper()
    if code and code != shop_currency.upper():
        errors.add(
            where,
            "currency",
            _(
                "%(code)s is not the shop's currency %(shop)s (shop profile); "
                "convert the price or leave the column empty"
            )
            % {"code": code, "shop": shop_currency},
        )


def _available(value: Any, where: str, errors: _Errors) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value if value is not None else "").strip().lower()
    if not text:
        return True
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    errors.add(
        where,
        "available",
        _("%(value)s: write true or false (or yes, no, sold out)") % {"value": repr(value)},
    )
    return True


def _options_csv(value: str, where: str, errors: _Errors) -> dict[str, str]:
    options: dict[str, str] = {}
    for part in (p for p in value.split(";") if p.strip()):
        name, sep, option = part.partition("=")
        if not sep or not name.strip() or not option.strip():
            errors.add(
                where,
                "options",
                _("%(value)s: write name=value; name=value") % {"value": repr(part.strip())},
            )
            continue
        options[name.strip()] = option.strip()
    return options


def _options_json(value: Any, where: str, errors: _Errors) -> dict[str, str]:
    if value is None:
        return {}
    message = options_check(value)
    if message:
        errors.add(where, "options", message)
        return {}
    return {str(k).strip(): str(v).strip() for k, v in value.items()}


def _product_add(
    by_id: dict[str, ProductRecord], record: ProductRecord, where: str, errors: _Errors
) -> ProductRecord:
    """The product ``record`` names, merged with the one seen before under its id:
    the product's own fields must agree wherever it is given."""
    seen = by_id.get(record.product_id)
    if seen is None:
        by_id[record.product_id] = record
        return record
    for name in ("name", "category", "description"):
        if getattr(record, name) != getattr(seen, name):
            errors.add(
                where,
                name,
                _("%(value)s differs from %(seen)s given for product %(product)s at %(where)s")
                % {
                    "value": repr(getattr(record, name)),
                    "seen": repr(getattr(seen, name)),
                    "product": record.product_id,
                    "where": seen.where,
                },
            )
    return seen


def _sku_add(skus: dict[str, str], sku: str, where: str, errors: _Errors) -> bool:
    if sku in skus:
        errors.add(
            where,
            "sku",
            _("%(sku)s is given twice (first at %(where)s)") % {"sku": sku, "where": skus[sku]},
        )
        return False
    skus[sku] = where
    return True


def csv_parse(data: bytes, *, shop_currency: str) -> Parsed:
    """A CSV file (UTF-8, a header row with the columns in CSV_COLUMNS)."""
    parsed = Parsed()
    errors = _Errors(parsed.errors)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        errors.add(
            _("the file"),
            "encoding",
            _("is not UTF-8 (byte %(n)d); save it as UTF-8") % {"n": exc.start},
        )
        return parsed
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = [(name or "").strip().lower() for name in reader.fieldnames or []]
    if not header:
        errors.add(_line(1), "header", _("the file is empty; the first line names the columns"))
        return parsed
    unknown = [name for name in header if name not in CSV_COLUMNS]
    missing = [name for name in CSV_REQUIRED if name not in header]
    if unknown:
        errors.add(
            _line(1),
            "header",
            _("unknown column %(names)s; the columns are %(columns)s")
            % {"names": ", ".join(map(repr, unknown)), "columns": ", ".join(CSV_COLUMNS)},
        )
    if missing:
        errors.add(
            _line(1),
            "header",
            _("missing column %(names)s") % {"names": ", ".join(map(repr, missing))},
        )
    if unknown or missing:
        return parsed
    reader.fieldnames = header
    by_id: dict[str, ProductRecord] = {}
    skus: dict[str, str] = {}
    for row in reader:
        where = _line(reader.line_num)
        if None in row:
            errors.add(
                where,
                "row",
                _("has %(cells)d cells, the header %(header)d: quote values that hold a comma")
                % {"cells": len(header) + len(row[None]), "header": len(header)},
            )
            continue
        if not any((v or "").strip() for v in row.values()):
            continue  # a blank line
        sku = _text(row.get("sku"), "sku", where, errors, required=True)
        product_id = _text(row.get("product_id"), "product_id", where, errors) or sku
        record = ProductRecord(
            product_id=product_id,
            name=_text(row.get("name"), "name", where, errors, required=True),
            category=_text(row.get("category"), "category", where, errors),
            description=_text(row.get("description"), "description", where, errors),
            where=where,
        )
        price = _price(row.get("price"), where, errors)
        _currency(row.get("currency"), shop_currency, where, errors)
        variant_options = _options_csv(row.get("options") or "", where, errors)
        available = _available(row.get("available"), where, errors)
        product = _product_add(by_id, record, where, errors) if product_id else None
        if sku and price is not None and product and _sku_add(skus, sku, where, errors):
            product.variants.append(VariantRecord(sku, variant_options, price, available))
    parsed.products = list(by_id.values())
    return parsed


def json_parse(data: bytes | Any, *, shop_currency: str) -> Parsed:
    """A JSON document: ``{"products": [...]}`` or the bare list of products. ``data``
    is the file's bytes or an already-decoded document (an API page)."""
    parsed = Parsed()
    errors = _Errors(parsed.errors)
    if isinstance(data, bytes | str):
        try:
            data = json.loads(data)
        except ValueError as exc:
            errors.add(_("the file"), "JSON", _("is not valid JSON: %(error)s") % {"error": exc})
            return parsed
    products = data.get("products") if isinstance(data, dict) else data
    if not isinstance(products, list):
        errors.add(_("the document"), "products", _('must be a list: {"products": [...]}'))
        return parsed
    by_id: dict[str, ProductRecord] = {}
    skus: dict[str, str] = {}
    for i, item in enumerate(products):
        where = f"products[{i}]"
        if not isinstance(item, dict):
            errors.add(where, "product", _("must be an object"))
            continue
        record = ProductRecord(
            product_id=_text(item.get("product_id"), "product_id", where, errors, required=True),
            name=_text(item.get("name"), "name", where, errors, required=True),
            category=_text(item.get("category"), "category", where, errors),
            description=_text(item.get("description"), "description", where, errors),
            where=where,
        )
        variants = item.get("variants")
        if not isinstance(variants, list) or not variants:
            errors.add(where, "variants", _("must be a list of at least one variant"))
            continue
        product = _product_add(by_id, record, where, errors) if record.product_id else None
        for j, variant in enumerate(variants):
            vwhere = f"{where}.variants[{j}]"
            if not isinstance(variant, dict):
                errors.add(vwhere, "variant", _("must be an object"))
                continue
            sku = _text(variant.get("sku"), "sku", vwhere, errors, required=True)
            price = _price(variant.get("price"), vwhere, errors)
            _currency(variant.get("currency"), shop_currency, vwhere, errors)
            options = _options_json(variant.get("options"), vwhere, errors)
            available = _available(variant.get("available"), vwhere, errors)
            if sku and price is not None and product and _sku_add(skus, sku, vwhere, errors):
                product.variants.append(VariantRecord(sku, options, price, available))
    parsed.products = list(by_id.values())
    return parsed


def catalogue_parse(data: bytes, *, filename: str, shop_currency: str) -> Parsed:
    """A file by its name's ending: .csv or .json."""
    name = filename.lower()
    if name.endswith(".csv"):
        return csv_parse(data, shop_currency=shop_currency)
    if name.endswith(".json"):
        return json_parse(data, shop_currency=shop_currency)
    parsed = Parsed()
    parsed.errors.append(
        RowError(
            _("the file"),
            "name",
            _("%(name)s: send a .csv or .json file") % {"name": repr(filename)},
        )
    )
    return parsed
