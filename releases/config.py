"""What a release configures, typed and validated.

A release's ``config`` column is JSON written by operators (console, admin) and read
on every turn, so it is parsed into a frozen dataclass and checked once, at save
time. Anything a release leaves out falls back to the process settings, so the
baseline release can be ``{}`` and a candidate states only what it changes.

Shape (every key optional)::

    {
      "roles": {"L1": "fast", "L2": "fallback", "L3": "large"},   # model role per tier
      "prompt_version": "v2",          # reply templates keyed "<key>-v2" win over "<key>"
      "router": {"clarify_threshold": 0.5},
      "fast": {"temperature": 0.2, "max_tokens": 64}
    }

A role names an entry of ``INFERENCE_BACKENDS`` (e.g. a second fast model declared as
``fast_candidate``), which is how a release picks "which backend and model".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError

from routing.types import L1, L2, L3

TIERS = (L1, L2, L3)
_VERSION = re.compile(r"^[A-Za-z0-9_]{1,20}$")
_KEYS = {"roles", "prompt_version", "router", "fast"}


@dataclass(frozen=True)
class ReleaseConfig:
    roles: dict[str, str] = field(default_factory=dict)
    prompt_version: str = ""
    clarify_threshold: float | None = None
    fast_temperature: float | None = None
    fast_max_tokens: int | None = None

    def role_for(self, tier: str, default: str) -> str:
        return self.roles.get(tier, default)

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.roles:
            data["roles"] = dict(self.roles)
        if self.prompt_version:
            data["prompt_version"] = self.prompt_version
        if self.clarify_threshold is not None:
            data["router"] = {"clarify_threshold": self.clarify_threshold}
        fast = {
            k: v
            for k, v in (
                ("temperature", self.fast_temperature),
                ("max_tokens", self.fast_max_tokens),
            )
            if v is not None
        }
        if fast:
            data["fast"] = fast
        return data


def _number(value: Any, *, name: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(f"{name} must be a number")
    if not low <= float(value) <= high:
        raise ValidationError(f"{name} must be between {low} and {high}")
    return float(value)


def config_parse(data: Any, *, check_roles: bool = True) -> ReleaseConfig:
    """Parse and validate a release's JSON config; raises ``ValidationError``."""
    if data in (None, ""):
        data = {}
    if not isinstance(data, dict):
        raise ValidationError("the configuration must be a JSON object")
    unknown = set(data) - _KEYS
    if unknown:
        raise ValidationError(f"unknown keys {sorted(unknown)}; allowed: {sorted(_KEYS)}")
    roles = data.get("roles") or {}
    if not isinstance(roles, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v for k, v in roles.items()
    ):
        raise ValidationError('"roles" must map tiers to role names, e.g. {"L1": "fast"}')
    if set(roles) - set(TIERS):
        raise ValidationError(f'"roles" keys must be among {list(TIERS)}')
    if check_roles:
        for tier, role in roles.items():
            _role_check(tier, role)
    version = data.get("prompt_version") or ""
    if not isinstance(version, str) or (version and not _VERSION.match(version)):
        raise ValidationError('"prompt_version" is letters, digits and _ (at most 20)')
    router = data.get("router") or {}
    fast = data.get("fast") or {}
    if not isinstance(router, dict) or set(router) - {"clarify_threshold"}:
        raise ValidationError('"router" takes only "clarify_threshold"')
    if not isinstance(fast, dict) or set(fast) - {"temperature", "max_tokens"}:
        raise ValidationError('"fast" takes "temperature" and "max_tokens"')
    threshold = router.get("clarify_threshold")
    temperature = fast.get("temperature")
    max_tokens = fast.get("max_tokens")
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)):
        raise ValidationError("fast.max_tokens must be a whole number")
    return ReleaseConfig(
        roles=dict(roles),
        prompt_version=version,
        clarify_threshold=None
        if threshold is None
        else _number(threshold, name="router.clarify_threshold", low=0.0, high=1.0),
        fast_temperature=None
        if temperature is None
        else _number(temperature, name="fast.temperature", low=0.0, high=2.0),
        fast_max_tokens=None
        if max_tokens is None
        else int(_number(max_tokens, name="fast.max_tokens", low=1, high=2048)),
    )


def _role_check(tier: str, role: str) -> None:
    # Constructing a backend is cheap (no model is loaded), and it proves the role is
    # declared in INFERENCE_BACKENDS (or registered by a test) before traffic meets it.
    from inference.base import InferenceError
    from inference.registry import get_backend

    try:
        get_backend(role)
    except InferenceError as exc:
        raise ValidationError(f"{tier}: model role {role!r} is not declared ({exc})") from exc
