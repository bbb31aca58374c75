"""One refresh scheme for every in-process cache built from the database.

A **version source** reads a key that moves on every change: a counter row bumped by
signals or services in the same transaction as the change, plus a stamp (a UUID, a
timestamp) so that a rolled-back bump can never repeat a key a process has already
built from. A **versioned cache** holds one value built from the data and its key:

- ``get()`` returns the value without any I/O while the last check is younger than the
  source's interval; after that, it reads the key (one tiny query) and rebuilds only if
  the key moved, passing the previous value so the build can reuse its expensive parts;
- a bump made in this process is seen on the next call, not after the interval: the
  bumping code calls ``source.expire()`` (now and on commit);
- while one thread rebuilds, the others keep serving the previous value;
- **fail-safe**: if reading the key or building fails and there is a previous value,
  it is served and the check is retried after the interval (a cache never becomes an
  outage); ``BuildPending`` does the same without logging an error. With no value yet,
  the error propagates.

Used by the router's rules and classifier and the reply templates (``RouterVersion``,
routing/versioning.py) and by the knowledge index (``KnowledgeBaseVersion``,
knowledge/index.py). Blocking: never call ``get`` on the event loop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")


class BuildPending(Exception):
    """Raised by a cache's ``build`` when the new value is not ready yet (e.g. the
    retrain task has not stored the new classifier): keep serving the previous value
    and ask again after the next interval, without logging an error."""


class VersionSource:
    """Where a family of caches reads its version, and how often.

    ``read`` returns the current key (hashable; it must change on every bump);
    ``check_interval_s`` is a number or a callable (read on every check, so a setting
    can be changed at run time); ``clock`` is monotonic seconds (tests move it).
    """

    def __init__(
        self,
        *,
        name: str,
        read: Callable[[], Hashable],
        check_interval_s: float | Callable[[], float],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.read = read
        self._interval = check_interval_s
        self.clock = clock
        # Moved by ``expire`` (an int rebind, atomic under the GIL): every cache of
        # this source checks the key again on its next use.
        self.generation = 0

    @property
    def check_interval_s(self) -> float:
        interval = self._interval
        return float(interval() if callable(interval) else interval)

    def expire(self) -> None:
        """Make this process's caches of this source check the key on their next use.

        Cheap: nothing is rebuilt unless the key really moved. Call it after a bump in
        this process (and again on commit), and between tests."""
        self.generation += 1


@dataclass(frozen=True)
class _Entry(Generic[T]):
    key: Hashable
    value: T


class VersionedCache(Generic[T]):
    """A value built from the data behind ``source``, rebuilt when its key moves.

    ``build(previous, key)`` gets the value it replaces (None the first time) and the
    key it builds for."""

    def __init__(
        self,
        *,
        name: str,
        source: VersionSource,
        build: Callable[[T | None, Hashable], T],
    ) -> None:
        self.name = name
        self.source = source
        self.build = build
        self._lock = threading.Lock()
        self._entry: _Entry[T] | None = None
        self._checked_at = float("-inf")
        self._checked_generation = -1

    def _fresh(self) -> bool:
        return (
            self._entry is not None
            and self._checked_generation == self.source.generation
            and self.source.clock() - self._checked_at < self.source.check_interval_s
        )

    def _checked(self, generation: int) -> None:
        self._checked_at = self.source.clock()
        self._checked_generation = generation

    @property
    def key(self) -> Hashable | None:
        """The key of the value in hand (None before the first build)."""
        entry = self._entry
        return entry.key if entry is not None else None

    def get(self, *, force_check: bool = False) -> T:
        entry = self._entry
        if entry is not None and not force_check and self._fresh():
            return entry.value
        # With a value in hand, never wait for another thread's rebuild.
        if not self._lock.acquire(blocking=entry is None or force_check):
            assert entry is not None
            return entry.value
        try:
            if not force_check and self._fresh():
                assert self._entry is not None
                return self._entry.value
            # Read the generation and the key *before* the data: a change that lands
            # in between only causes one extra rebuild, never a stale value labelled
            # as current.
            generation = self.source.generation
            try:
                key = self.source.read()
                if self._entry is None or self._entry.key != key:
                    previous = self._entry.value if self._entry is not None else None
                    started = time.perf_counter()
                    self._entry = _Entry(key=key, value=self.build(previous, key))
                    logger.info(
                        "rebuilt %s for %s %s in %.0f ms",
                        self.name,
                        self.source.name,
                        key,
                        (time.perf_counter() - started) * 1000,
                    )
            except BuildPending as pending:
                if self._entry is None:
                    raise
                logger.debug("%s pending: %s", self.name, pending)
                self._checked(generation)
                return self._entry.value
            except Exception:
                if self._entry is None:
                    raise
                # The database hiccuped: the last good value beats failing the
                # shopper's turn. Retry after the next interval.
                logger.exception("%s refresh failed; serving the previous one", self.name)
                self._checked(generation)
                return self._entry.value
            self._checked(generation)
            return self._entry.value
        finally:
            self._lock.release()

    def install(self, value: T, *, key: Hashable) -> None:
        """Serve ``value`` as the one built for ``key`` (a prepared value, e.g. the
        benchmark's synthetic index) until the next check finds another key."""
        with self._lock:
            self._entry = _Entry(key=key, value=value)
            self._checked(self.source.generation)

    def reset(self) -> None:
        """Forget the value: the next ``get`` builds from scratch (tests)."""
        with self._lock:
            self._entry = None
            self._checked_at = float("-inf")
            self._checked_generation = -1
