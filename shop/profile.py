"""The shop profile as typed values: the one place flows, templates and checks read the
order-id forms, postcode formats, currency and the return policy from.

The ShopProfile row is read once and kept for ``CACHE_SECONDS``; a save or delete in
this process clears it at once, and other processes (workers, a second Daphne) see the
change within ``CACHE_SECONDS``. With no row, the demo shop's values
(shop/seed_data/demo_profile.json) apply; ``manage.py setup_shop`` warns about that.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from .values import ShopProfileData, demo_profile, profile_parse

CACHE_SECONDS = 5.0

_lock = threading.Lock()
_cached: tuple[float, ShopProfileData] | None = None


def shop_profile() -> ShopProfileData:
    """The shop's profile: the ShopProfile row, else the demo shop's values. Reads the
    database at most once per ``CACHE_SECONDS``; call it from sync code."""
    global _cached
    now = time.monotonic()
    cached = _cached
    if cached is not None and now - cached[0] < CACHE_SECONDS:
        return cached[1]
    from .models import ShopProfile  # lazy: callers import this module before apps load

    row = ShopProfile.objects.first()
    profile = profile_parse(row.values(), from_database=True) if row else demo_profile()
    with _lock:
        _cached = (now, profile)
    return profile


def profile_cache_clear(**_: Any) -> None:
    global _cached
    with _lock:
        _cached = None


def connect_invalidation() -> None:
    from django.db.models.signals import post_delete, post_save

    from .models import ShopProfile

    post_save.connect(profile_cache_clear, sender=ShopProfile, dispatch_uid="shop_profile_save")
    post_delete.connect(profile_cache_clear, sender=ShopProfile, dispatch_uid="shop_profile_del")
