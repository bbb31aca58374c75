"""Issue #16: httpcore tries ``import sniffio`` on every request (each model request and
capacity probe, on the event loop). Not installed, each try searched the whole path
again: 6% of Daphne's event-loop time at 200 sessions. The inference app marks such
optional modules absent once, at start."""

from __future__ import annotations

import importlib.machinery
import importlib.metadata
import sys
from typing import Any

import pytest

from inference.apps import OPTIONAL_MODULES


def test_an_absent_optional_module_fails_without_a_path_search(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from httpcore._synchronization import current_async_library

    try:
        importlib.metadata.distribution("sniffio")
        pytest.skip("sniffio is installed here: nothing to mark")
    except importlib.metadata.PackageNotFoundError:
        pass
    assert "sniffio" in OPTIONAL_MODULES and sys.modules.get("sniffio", "not marked") is None
    searched: list[str] = []
    real = importlib.machinery.PathFinder.find_spec

    def find_spec(name: str, *args: Any, **kwargs: Any) -> Any:
        searched.append(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.machinery.PathFinder, "find_spec", find_spec)
    assert current_async_library() == "asyncio"  # the request path's call
    with pytest.raises(ImportError):
        import sniffio  # noqa: F401
    assert "sniffio" not in searched
