"""The one place that reads the process environment.

Every other module reads ``django.conf.settings``; nothing else calls ``os.environ``.
A ``.env`` file beside manage.py (or the file ``TIERDESK_ENV_FILE`` names) is loaded
first, without overriding real variables, so a shop can keep its configuration in one
file; ``.env.example`` lists every name and can be copied to ``.env`` as it is.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import dotenv
from django.core.exceptions import ImproperlyConfigured


class ImproperlyConfiguredEnv(ImproperlyConfigured):
    """A variable is present but cannot be parsed or names nothing known; start-up stops."""


def load_dotenv(default: Path) -> Path | None:
    """Load the .env file into the environment; return the file loaded, if any.

    python-dotenv parses the file as a shell would: ``KEY=value   # note`` is
    ``value``, quotes are removed, ``KEY=`` is empty. Values are taken literally
    (no ``${VAR}`` expansion), so a secret containing ``$`` survives.
    """
    path = Path(os.environ.get("TIERDESK_ENV_FILE") or default)
    if not path.is_file():
        return None
    dotenv.load_dotenv(path, override=False, interpolate=False, encoding="utf-8")
    return path


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfiguredEnv(f"{name}={raw!r} is not a boolean (use true/false)")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ImproperlyConfiguredEnv(f"{name}={raw!r} is not an integer") from exc


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise ImproperlyConfiguredEnv(f"{name}={raw!r} is not a number") from exc


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def origin_parse(name: str, value: str) -> str:
    """One web origin as a browser sends it in ``Origin``: lower-case scheme and host,
    the port only when it is not the scheme's default."""
    parts = urlsplit(value.strip().rstrip("/").lower())
    try:
        port = parts.port
    except ValueError:
        port = -1
    if (
        parts.scheme not in {"http", "https"}
        or not parts.hostname
        or parts.path
        or parts.query
        or parts.fragment
        or parts.username
        or port == -1
        or "*" in value
    ):
        raise ImproperlyConfiguredEnv(
            f"{name}: {value!r} is not an origin; write each site as scheme://host[:port], "
            "e.g. https://shop.example.com (comma-separated, no path)"
        )
    default = {"http": 80, "https": 443}[parts.scheme]
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}" + (f":{port}" if port and port != default else "")


def env_origins(name: str) -> list[str]:
    """A comma-separated list of web origins (``origin_parse``); empty when unset."""
    return [origin_parse(name, item) for item in env_list(name, [])]


def env_json_object(name: str) -> dict[str, Any]:
    """A JSON object (``{"bucket_name": "..."}``); empty when unset."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return {}
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise ImproperlyConfiguredEnv(f"{name} is not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise ImproperlyConfiguredEnv(f'{name} must be a JSON object, like {{"key": "value"}}')
    return value
