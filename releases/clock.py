"""The clock every release decision reads, so tests can compress time.

Schedules (+5% every 2 h), metric minutes and guardrail windows all take "now" from
here. Production uses Django's ``timezone.now``; the simulation test installs a fake
clock and advances it by hours in a second, the way tests swap model backends in
``inference.registry``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime

from django.utils import timezone

_lock = threading.Lock()
_source: Callable[[], datetime] | None = None


def now() -> datetime:
    with _lock:
        source = _source
    return source() if source is not None else timezone.now()


def install(source: Callable[[], datetime]) -> None:
    """Read time from ``source`` until ``reset`` (tests only)."""
    global _source
    with _lock:
        _source = source


def reset() -> None:
    global _source
    with _lock:
        _source = None


def minute_floor(moment: datetime) -> datetime:
    return moment.replace(second=0, microsecond=0)
