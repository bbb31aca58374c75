"""Reply templates: the admin-edited rows in routing.ReplyTemplate, with the seed file
as the last resort so a deleted row never leaves the bot speechless.

The rows are cached per process and reloaded when the router version moves (every
ReplyTemplate save or delete bumps it: routing/models.py), checked at most every
``versioning.CHECK_INTERVAL_S`` seconds (inference/versioned.py)."""

from __future__ import annotations

import json
import re
import string
from collections.abc import Hashable
from functools import cache
from pathlib import Path
from typing import Any

from inference.versioned import VersionedCache
from routing.order_ids import order_id_example
from routing.versioning import ROUTER_VERSION
from shop.profile import shop_profile

SEED_FILE = Path(__file__).resolve().parent / "seed_data" / "templates.json"


@cache
def seed_templates() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SEED_FILE.read_text(encoding="utf-8"))
    data.pop("_comment", None)
    return data


Rows = dict[tuple[str, str, str], str]


def _rows_build(previous: Rows | None, version: Hashable) -> Rows:
    from routing.models import ReplyTemplate

    return {
        (intent, key, lang): text
        for intent, key, lang, text in ReplyTemplate.objects.values_list(
            "intent__name", "key", "language", "text"
        )
    }


_cache: VersionedCache[Rows] = VersionedCache(
    name="reply templates", source=ROUTER_VERSION, build=_rows_build
)


def _load() -> Rows:
    return _cache.get()


def reset_template_cache() -> None:
    _cache.reset()


def template_get(*, intent: str, key: str, language: str) -> str:
    rows = _load()
    for lang in (language, "en"):
        if (intent, key, lang) in rows:
            return rows[(intent, key, lang)]
        seeded = seed_templates().get(intent, {}).get(key, {}).get(lang)
        if seeded:
            return str(seeded)
    raise KeyError(f"no template {intent}.{key}")


def template_get_exact(*, intent: str, key: str, language: str) -> str | None:
    """The admin-edited row for exactly this key and language, or None (no fallbacks:
    a release's versioned template must not answer a Chinese shopper in English)."""
    return _load().get((intent, key, language))


def placeholders(template: str) -> list[str]:
    return [name for _, name, _, _ in string.Formatter().parse(template) if name]


SHOP_FACTS = ("order_id_example", "currency")


def shop_facts(template: str) -> dict[str, str]:
    """What the template quotes from the shop profile: an order id in the shop's form
    (``{order_id_example}``) and its currency symbol (``{currency}``); the profile is
    read only when the template names one of them."""
    named = set(placeholders(template)) & set(SHOP_FACTS)
    if not named:
        return {}
    values = {
        "order_id_example": order_id_example,
        "currency": lambda: shop_profile().currency_symbol,
    }
    return {name: values[name]() for name in named}


def template_render(template: str, facts: dict[str, str]) -> str:
    # A template edited by an admin may name a fact we don't have: leave it visible
    # rather than crash the turn. A fact the shop leaves empty (its return_shipping
    # sentence) leaves no double space behind.
    text = template.format_map(_Missing(shop_facts(template) | facts))
    return _SPACES.sub(" ", text)


_SPACES = re.compile(r"(?<=\S) {2,}(?=\S)")


class _Missing(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"
