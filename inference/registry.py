"""Maps roles (``fast``, ``fallback``, ``large``) to backends declared in settings.

``INFERENCE_BACKENDS = {role: {"BACKEND": dotted.path, "CONFIG": {...}} | {"ALIAS": role}}``,
loaded lazily, once per process, and dropped when the setting changes (tests).
Tests may also ``register`` a backend object for a role and ``reset`` afterwards.
"""

from __future__ import annotations

import threading
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string

from .base import InferenceError, ModelBackend

_lock = threading.RLock()
_loaded: dict[str, ModelBackend] = {}
_overrides: dict[str, ModelBackend] = {}


def resolve_role(role: str) -> str:
    """Follow aliases to the role that really owns a backend."""
    seen: set[str] = set()
    declared = settings.INFERENCE_BACKENDS
    while role in declared and "ALIAS" in declared[role] and role not in _overrides:
        if role in seen:
            raise InferenceError("config_error", f"alias loop at role {role!r}")
        seen.add(role)
        role = str(declared[role]["ALIAS"])
    return role


def get_backend(role: str) -> ModelBackend:
    """The backend serving ``role``; constructed (not yet loaded) on first use."""
    with _lock:
        if role in _overrides:
            return _overrides[role]
        real = resolve_role(role)
        if real in _overrides:
            return _overrides[real]
        if real not in _loaded:
            declared: dict[str, Any] | None = settings.INFERENCE_BACKENDS.get(real)
            if declared is None:
                raise InferenceError("config_error", f"no backend declared for role {role!r}")
            cls = import_string(declared["BACKEND"])
            _loaded[real] = cls(real, dict(declared.get("CONFIG", {})))
        return _loaded[real]


def roles() -> list[str]:
    return list(settings.INFERENCE_BACKENDS)


def register(role: str, backend: ModelBackend) -> None:
    with _lock:
        _overrides[role] = backend


def unregister(role: str) -> None:
    with _lock:
        _overrides.pop(role, None)


def reset() -> None:
    """Forget overrides and constructed backends (their models are freed)."""
    with _lock:
        for backend in _loaded.values():
            backend.close()
        _loaded.clear()
        _overrides.clear()


def on_setting_changed(*, setting: str, **_: Any) -> None:
    if setting == "INFERENCE_BACKENDS":
        reset()
