"""How every process notices admin edits to the router's data without a restart.

A single ``RouterVersion`` row is bumped on every change (see the receivers in
models.py). It is the version source (``ROUTER_VERSION``, the one scheme of
inference/versioned.py) of the router's caches: the rules, the classifier and the
reply templates. They poll it at most every ``CHECK_INTERVAL_S`` seconds, so the hot
path costs no database query; a bump made in this very process is noticed on the
next call, because it also expires the source in this process.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from typing import NamedTuple

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F

from inference.jobs import task_enqueue
from inference.versioned import VersionSource
from routing.models import RouterVersion

logger = logging.getLogger(__name__)

CHECK_INTERVAL_S = 2.0
_ROW_ID = 1


class VersionKey(NamedTuple):
    version: int
    stamp: str


# Module-level so tests can move time forward instead of sleeping.
_clock: Callable[[], float] = time.monotonic


def router_caches_expire() -> None:
    """Make every router cache in this process re-check the version on its next use.

    Cheap: nothing is rebuilt unless the version really changed. Test suites call it
    between tests, whose rolled-back data the poll interval would otherwise hide.
    """
    ROUTER_VERSION.expire()


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
    # every process then loads the stored model (routing/classifier_store.py).
    transaction.on_commit(lambda: router_retrain_enqueue(version=key.version))
    return key


# Late-bound (module globals looked up on each call) so tests can replace the clock,
# the interval or the reader.
ROUTER_VERSION = VersionSource(
    name="router",
    read=lambda: router_version_get(),
    check_interval_s=lambda: CHECK_INTERVAL_S,
    clock=lambda: _clock(),
)


def router_retrain_enqueue(*, version: int) -> None:
    """Ask a worker to retrain for ``version``. Runs after the change commits
    (``router_version_bump`` registers it with ``transaction.on_commit``).

    Never raises: with the broker down, processes wait at most
    ``TIERDESK_ROUTER_RETRAIN_GRACE_S`` for a stored model, then train their own.
    """
    if not settings.TIERDESK_ROUTER_RETRAIN_ASYNC:
        return
    try:
        # Shown in admin as "queued" until the worker picks the task up.
        from routing.models import RetrainRun

        RetrainRun.objects.get_or_create(router_version=version)
    except Exception:
        logger.exception("could not record the queued retrain for v%s", version)
    try:
        task_enqueue("routing.router_retrain", args=[version])
    except Exception:
        logger.exception("could not enqueue router_retrain for v%s", version)
