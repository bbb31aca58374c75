"""Load the demo shop's profile (shop/seed_data/demo_profile.json) into the one
ShopProfile row, unless a row exists: a support admin's edits are never overwritten."""

from __future__ import annotations

from .models import ShopProfile
from .values import demo_profile, demo_profile_values


def profile_seed() -> dict[str, int]:
    if ShopProfile.objects.exists():
        return {"created": 0}
    demo_profile()  # the seed file parses, or this raises with the field at fault
    ShopProfile(**demo_profile_values()).save()
    return {"created": 1}
