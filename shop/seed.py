"""Write the one ShopProfile row: the demo shop's values (shop/seed_data/demo_profile.json)
unless a row exists, so a support admin's edits are never overwritten; or a shop's own
profile file (``manage.py setup_shop --profile FILE``), which replaces the row."""

from __future__ import annotations

import json
from typing import Any

from .models import ShopProfile
from .values import (
    ProfileError,
    ShopProfileData,
    demo_profile,
    demo_profile_values,
    profile_parse,
)

PROFILE_FIELDS = frozenset(
    f.name for f in ShopProfile._meta.concrete_fields if f.name not in ("id", "updated_at")
)


def profile_seed() -> dict[str, int]:
    if ShopProfile.objects.exists():
        return {"created": 0}
    demo_profile()  # the seed file parses, or this raises with the field at fault
    ShopProfile(**demo_profile_values()).save()
    return {"created": 1}


def profile_load(data: bytes) -> ShopProfileData:
    """Replace the ShopProfile row with a profile file's values (the JSON object of
    shop/seed_data/demo_profile.json's shape; keys starting with ``_`` are comments).
    Every field is required and checked as the admin checks it; a ProfileError names
    the field at fault and nothing is written."""
    try:
        raw: Any = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ProfileError("file", f"not a JSON object: {error}") from error
    if not isinstance(raw, dict):
        raise ProfileError("file", "not a JSON object of the profile's fields.")
    values = {k: v for k, v in raw.items() if not str(k).startswith("_")}
    unknown = sorted(set(values) - PROFILE_FIELDS)
    if unknown:
        raise ProfileError(
            unknown[0],
            f"not a shop profile field; the fields are {', '.join(sorted(PROFILE_FIELDS))}.",
        )
    missing = sorted(
        PROFILE_FIELDS - set(values) - {"product_categories", "category_return_window_days"}
    )
    if missing:
        raise ProfileError(missing[0], "missing from the file.")
    profile = profile_parse(values)
    ShopProfile(**values).save()
    return profile
