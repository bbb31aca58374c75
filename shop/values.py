"""The shop profile's values, typed and validated: ``profile_parse`` turns the
ShopProfile row's fields (or the demo seed file's) into a ``ShopProfileData`` or a
``ProfileError`` that names the field at fault."""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import cache
from pathlib import Path
from typing import Any

from .specs import (
    OrderIdSpec,
    PostcodeFormat,
    SpecError,
    order_id_specs_parse,
    postcode_formats_parse,
)

DEMO_PROFILE_PATH = Path(__file__).resolve().parent / "seed_data" / "demo_profile.json"
DEFAULT_CATEGORY = "default"
LANGUAGES = ("en", "zh")


class ProfileError(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class ReturnPolicy:
    windows_by_membership: dict[str, int | None]
    default_membership: str
    category_of_product: dict[str, str]
    windows_by_category: dict[str, int]
    conditions_by_category: dict[str, dict[str, str]]
    restocking_fee_percent: Decimal

    def category(self, product_name: str) -> str:
        return self.category_of_product.get(product_name.strip().casefold(), DEFAULT_CATEGORY)

    def window_days(self, *, membership: str = "", categories: tuple[str, ...] = ()) -> int | None:
        """Days from purchase a return may be requested in; None for any time. A
        category's own window applies when it is shorter: the bot never promises a
        return the policy does not allow."""
        level = membership if membership in self.windows_by_membership else ""
        windows = [self.windows_by_membership.get(level or self.default_membership)]
        own = self.windows_by_category
        windows += [own[c] for c in categories if c in own]
        limited = [w for w in windows if w is not None]
        return min(limited) if limited else None

    def conditions(self, categories: tuple[str, ...], language: str) -> str:
        """The conditions of these categories, each once, in their order."""
        lang = language if language in LANGUAGES else "en"
        texts: list[str] = []
        for category in categories or (DEFAULT_CATEGORY,):
            by_lang = self.conditions_by_category.get(
                category, self.conditions_by_category[DEFAULT_CATEGORY]
            )
            text = by_lang[lang]
            if text not in texts:
                texts.append(text)
        return ("；" if lang == "zh" else "; ").join(texts)


@dataclass(frozen=True)
class ShopProfileData:
    order_id_specs: tuple[OrderIdSpec, ...]
    postcode_formats: tuple[PostcodeFormat, ...]
    country: str
    currency_code: str
    currency_symbol: str
    returns: ReturnPolicy
    # When a refund reaches the shopper, by payment method ("default" for the rest),
    # and what the shop does about sending returns back, in English and Chinese.
    refund_timing_by_payment: dict[str, dict[str, str]]
    return_shipping_text: dict[str, str]
    from_database: bool = False

    def refund_timing(self, payment_method: str, language: str) -> str:
        lang = language if language in LANGUAGES else "en"
        by_payment = self.refund_timing_by_payment
        return by_payment.get(payment_method, by_payment[DEFAULT_CATEGORY])[lang]

    def return_shipping(self, language: str) -> str:
        return self.return_shipping_text.get(language if language in LANGUAGES else "en", "")


def _windows(field: str, raw: Any, *, allow_none: bool) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ProfileError(field, 'give a JSON object, e.g. {"guest": 30}.')
    windows: dict[str, Any] = {}
    for key, days in raw.items():
        if days is None and allow_none:
            windows[str(key)] = None
        elif isinstance(days, int) and not isinstance(days, bool) and 0 <= days <= 36500:
            windows[str(key)] = days
        else:
            allowed = "a whole number of days from 0 or null" if allow_none else "0 or more days"
            raise ProfileError(field, f"{key!r} is {days!r}; give {allowed}.")
    return windows


def _categories(raw: Any) -> dict[str, str]:
    if not isinstance(raw, dict) or not all(isinstance(v, list) for v in raw.values()):
        raise ProfileError(
            "product_categories", 'give product names by category, e.g. {"bikes": ["Gravel Bike"]}.'
        )
    by_product: dict[str, str] = {}
    for category, names in raw.items():
        for name in names:
            key = str(name).strip().casefold()
            if key in by_product and by_product[key] != category:
                raise ProfileError(
                    "product_categories",
                    f"{name!r} is in both {by_product[key]!r} and {category!r}.",
                )
            by_product[key] = str(category)
    return by_product


def _by_language(field: str, raw: Any) -> dict[str, str]:
    """One text per language, both given or both left out (an empty object: the
    replies say nothing of it)."""
    if raw in (None, "", {}):
        return {}
    texts = raw if isinstance(raw, dict) else {}
    missing = [lang for lang in LANGUAGES if not str(texts.get(lang, "")).strip()]
    if missing or set(texts) - set(LANGUAGES):
        raise ProfileError(
            field, 'give {"en": "...", "zh": "..."} with both texts, or {} to say nothing.'
        )
    return {lang: str(texts[lang]).strip() for lang in LANGUAGES}


def _conditions(
    raw: Any, field: str = "return_conditions", what: str = "category"
) -> dict[str, dict[str, str]]:
    if not isinstance(raw, dict) or DEFAULT_CATEGORY not in raw:
        raise ProfileError(field, f'give texts by {what} with a "{DEFAULT_CATEGORY}" one.')
    parsed: dict[str, dict[str, str]] = {}
    for category, by_lang in raw.items():
        texts = by_lang if isinstance(by_lang, dict) else {}
        missing = [lang for lang in LANGUAGES if not str(texts.get(lang, "")).strip()]
        if missing:
            raise ProfileError(field, f"{category!r} has no text in {', '.join(missing)}.")
        parsed[str(category)] = {lang: str(texts[lang]).strip() for lang in LANGUAGES}
    return parsed


def _text(values: dict[str, Any], field: str, length: int, *, exact: bool = False) -> str:
    text = str(values.get(field) or "").strip()
    if not text or len(text) > length or (exact and len(text) != length):
        size = f"exactly {length}" if exact else f"1 to {length}"
        raise ProfileError(field, f"give {size} characters.")
    return text


def profile_parse(values: dict[str, Any], *, from_database: bool = False) -> ShopProfileData:
    """The typed profile from the model's field values (or the seed file's); a
    ProfileError names the field and what to write instead."""
    try:
        specs = order_id_specs_parse(values.get("order_id_formats") or "")
    except SpecError as error:
        raise ProfileError("order_id_formats", str(error)) from error
    try:
        postcodes = postcode_formats_parse(values.get("postcode_formats") or "")
    except SpecError as error:
        raise ProfileError("postcode_formats", str(error)) from error
    windows = _windows("return_window_days", values.get("return_window_days"), allow_none=True)
    membership = _text(values, "default_membership", 32)
    if membership not in windows:
        raise ProfileError(
            "default_membership", f"{membership!r} has no window in return_window_days."
        )
    try:
        fee = Decimal(str(values.get("restocking_fee_percent", "0")))
    except InvalidOperation as error:
        raise ProfileError("restocking_fee_percent", "give a number, e.g. 0 or 15.") from error
    if not Decimal(0) <= fee <= Decimal(100):
        raise ProfileError("restocking_fee_percent", "give a percent from 0 to 100.")
    returns = ReturnPolicy(
        windows_by_membership=windows,
        default_membership=membership,
        category_of_product=_categories(values.get("product_categories") or {}),
        windows_by_category=_windows(
            "category_return_window_days",
            values.get("category_return_window_days") or {},
            allow_none=False,
        ),
        conditions_by_category=_conditions(values.get("return_conditions")),
        restocking_fee_percent=fee,
    )
    return ShopProfileData(
        order_id_specs=specs,
        postcode_formats=postcodes,
        country=_text(values, "country", 2, exact=True).upper(),
        currency_code=_text(values, "currency_code", 3, exact=True).upper(),
        currency_symbol=_text(values, "currency_symbol", 4),
        returns=returns,
        refund_timing_by_payment=_conditions(
            values.get("refund_timing"), "refund_timing", "payment method"
        ),
        return_shipping_text=_by_language("return_shipping", values.get("return_shipping")),
        from_database=from_database,
    )


def demo_profile_values() -> dict[str, Any]:
    data = json.loads(DEMO_PROFILE_PATH.read_text(encoding="utf-8"))
    return {k: v for k, v in data.items() if not k.startswith("_")}


@cache
def demo_profile() -> ShopProfileData:
    return profile_parse(demo_profile_values())
