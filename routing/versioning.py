"""How every process notices admin edits to the router's data without a restart.

A single ``RouterVersion`` row is bumped on every change (see the receivers in
models.py). Caches poll it at most every ``CHECK_INTERVAL_S`` seconds, so the hot
path costs no database query; a bump made in this very process is noticed on the
next call, because it also increments a process-local generation counter.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, NamedTuple, TypeVar

from django.db import IntegrityError, transaction
from django.db.models import F

from routing.models import RouterVersion

logger = logging.getLogger(__name__)

CHECK_INTERVAL_S = 2.0
_ROW_ID = 1

T = TypeVar("T")


class VersionKey(NamedTuple):
    version: int
    stamp: str


# Bumped (under the GIL, an int rebind) by every bump in this process, so this
# process's own edits don't wait for the poll interval.
_local_generation = 0
# Module-level so tests can move time forward instead of sleeping.
_clock: Callable[[], float] = time.monotonic


def router_caches_expire() -> None:
    """Make every router cache in this process re-check the version on its next use.

    Cheap: nothing is rebuilt unless the version really changed. Test suites call it
    between tests, whose rolled-back data the poll interval would otherwise hide.
    """
    global _local_generation
    _local_generation += 1


def router_version_get() -> VersionKey:
    row = RouterVersion.objects.filter(pk=_ROW_ID).values_list("version", "stamp").first()
    if row is None:
        return VersionKey(0, "")
    return VersionKey(row[0], str(row[1]))


def router_version_bump() -> VersionKey:
    router_caches_expire()
    # Again once the change is visible to this process's other threads' connections;
    # until then they could only re-read the old version.
    transaction.on_commit(router_caches_expire)
    stamp = uuid.uuid4()
    # A single UPDATE ... SET version = version + 1 is atomic, so concurrent admins
    # never lose a bump.
    updated = RouterVersion.objects.filter(pk=_ROW_ID).update(version=F("version") + 1, stamp=stamp)
    if not updated:
        try:
            # Savepoint: a concurrent first insert must not poison the caller's
            # transaction (the admin's save is running inside it).
            with transaction.atomic():
                RouterVersion.objects.create(pk=_ROW_ID, version=1, stamp=stamp)
        except IntegrityError:
            RouterVersion.objects.filter(pk=_ROW_ID).update(version=F("version") + 1, stamp=stamp)
    key = router_version_get()
    # The classifier is retrained once, by a Celery task, after the change commits;
    # every process then loads the stored model (routing/classifier.py).
    from routing.services import router_retrain_enqueue

    transaction.on_commit(lambda: router_retrain_enqueue(version=key.version))
    return key


class BuildPending(Exception):
    """Raised by a cache's ``build`` when the new value is not ready yet (the retrain
    task has not stored the new classifier): keep serving the previous value and ask
    again after the next interval, without logging an error."""


@dataclass(frozen=True)
class _Entry(Generic[T]):
    key: VersionKey
    value: T


class VersionedCache(Generic[T]):
    """A value built from the router's data, rebuilt when ``RouterVersion`` changes.

    ``build(previous)`` gets the value it replaces, so it can reuse expensive parts
    (the classifier is not retrained when only a rule changed). While one thread
    rebuilds, the others keep serving the previous value instead of queueing behind
    a training run.
    """

    def __init__(
        self,
        *,
        name: str,
        build: Callable[[T | None], T],
        check_interval_s: float = CHECK_INTERVAL_S,
    ) -> None:
        self.name = name
        self.build = build
        self.check_interval_s = check_interval_s
        self._lock = threading.Lock()
        self._entry: _Entry[T] | None = None
        self._checked_at = float("-inf")
        self._checked_generation = -1

    def _fresh(self) -> bool:
        return (
            self._entry is not None
            and self._checked_generation == _local_generation
            and _clock() - self._checked_at < self.check_interval_s
        )

    def get(self) -> T:
        entry = self._entry
        if entry is not None and self._fresh():
            return entry.value
        # With a value in hand, never wait for another thread's rebuild.
        if not self._lock.acquire(blocking=entry is None):
            assert entry is not None
            return entry.value
        try:
            if self._fresh():
                assert self._entry is not None
                return self._entry.value
            # Read the generation and the version *before* the data: a change that
            # lands in between only causes one extra rebuild, never a stale value
            # labelled as current.
            generation = _local_generation
            try:
                key = router_version_get()
                if self._entry is None or self._entry.key != key:
                    previous = self._entry.value if self._entry is not None else None
                    started = time.perf_counter()
                    self._entry = _Entry(key=key, value=self.build(previous))
                    logger.info(
                        "rebuilt %s for router v%s in %.0f ms",
                        self.name,
                        key.version,
                        (time.perf_counter() - started) * 1000,
                    )
            except BuildPending as pending:
                if self._entry is None:
                    raise
                logger.debug("router %s for v%s pending: %s", self.name, key.version, pending)
                self._checked_at = _clock()
                self._checked_generation = generation
                return self._entry.value
            except Exception:
                if self._entry is None:
                    raise
                # The database hiccuped: routing on the last good data beats failing
                # the shopper's turn. Retry after the next interval.
                logger.exception("router %s refresh failed; serving the previous one", self.name)
                self._checked_at = _clock()
                self._checked_generation = generation
                return self._entry.value
            self._checked_at = _clock()
            self._checked_generation = generation
            return self._entry.value
        finally:
            self._lock.release()
