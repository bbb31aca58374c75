"""Where the chat's blocking work runs: two small thread pools of this process.

Not ``database_sync_to_async``'s default, Channels' one "thread-sensitive" thread: every
connection of the process shares that thread, so under load each handshake's and each
message's database work would queue behind every other's (handshakes fail and the
first chunk waits under load: docs/benchmarks.md). Nothing here needs one thread:
Django keeps a connection per thread, and each call closes its thread's connection if
it is broken or past ``CONN_MAX_AGE`` before and after it runs (channels'
``DatabaseSyncToAsync``).

Two pools so that short database calls (a handshake, storing a message, storing a
reply) never wait behind a turn's planning, which is CPU work (routing, retrieval) that
can take a whole core for tens of milliseconds.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar, cast

from channels.db import DatabaseSyncToAsync
from django.conf import settings

P = ParamSpec("P")
T = TypeVar("T")


@functools.cache
def _pool(name: str) -> ThreadPoolExecutor:
    # Made on first use: settings are not read at import time.
    size = settings.TIERDESK_DB_THREADS if name == "db" else settings.TIERDESK_PLAN_THREADS
    return ThreadPoolExecutor(max_workers=size, thread_name_prefix=f"chat-{name}")


def in_db_thread(func: Callable[P, T]) -> Callable[P, Awaitable[T]]:
    """``func`` (short database work) as a coroutine run in the database pool."""
    return cast(
        Callable[P, Awaitable[T]],
        DatabaseSyncToAsync(func, thread_sensitive=False, executor=_pool("db")),
    )


def in_plan_thread(func: Callable[P, T]) -> Callable[P, Awaitable[T]]:
    """``func`` (a turn's planning: database and CPU work) as a coroutine run in the
    planning pool."""
    return cast(
        Callable[P, Awaitable[T]],
        DatabaseSyncToAsync(func, thread_sensitive=False, executor=_pool("plan")),
    )


def pools_shutdown() -> None:
    """Stop both pools (they are made again on next use). Their threads end, and with
    them each thread's database connection, so nothing a pool thread opened outlives
    this call; the test suite calls it after every test so that one test's pool threads
    and connections never meet the next test's database flush."""
    for name in ("db", "plan"):
        executor = _pool(name)
        executor.shutdown(wait=True)
    _pool.cache_clear()
