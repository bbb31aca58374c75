"""Reply templates: the admin-edited rows in routing.ReplyTemplate, with the seed file
as the last resort so a deleted row never leaves the bot speechless."""

from __future__ import annotations

import json
import string
import threading
import time
from functools import cache
from pathlib import Path
from typing import Any

_TTL_S = 5.0  # admins' edits show up within this many seconds, in every process
_lock = threading.Lock()
_cached: tuple[float, dict[tuple[str, str, str], str]] = (0.0, {})
SEED_FILE = Path(__file__).resolve().parent / "seed_data" / "templates.json"


@cache
def seed_templates() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SEED_FILE.read_text(encoding="utf-8"))
    data.pop("_comment", None)
    return data


def _load() -> dict[tuple[str, str, str], str]:
    global _cached
    now = time.monotonic()
    with _lock:
        if now - _cached[0] < _TTL_S:
            return _cached[1]
    from routing.models import ReplyTemplate

    rows = {
        (intent, key, lang): text
        for intent, key, lang, text in ReplyTemplate.objects.values_list(
            "intent__name", "key", "language", "text"
        )
    }
    with _lock:
        _cached = (now, rows)
    return rows


def reset_template_cache() -> None:
    global _cached
    with _lock:
        _cached = (0.0, {})


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


def template_render(template: str, facts: dict[str, str]) -> str:
    # A template edited by an admin may name a fact we don't have: leave it visible
    # rather than crash the turn.
    return template.format_map(_Missing(facts))


class _Missing(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"
