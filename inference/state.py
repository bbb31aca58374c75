"""Where state shared by every server process lives: Redis in production, this
process's memory in the embedded default (one Daphne process, no Redis).

Shared state is advisory: breakers, rate limits and the response cache must never
become the outage. Redis is reached with short timeouts, and after a failure it is
left alone for ``TIERDESK_STATE_REDIS_RETRY_S`` so a dead Redis costs one failed call
per second, not one per request. Callers treat ``RedisUnavailable`` as "let it
through" (fail open).
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from typing import Any

from django.conf import settings

logger = logging.getLogger(__name__)


class RedisUnavailable(RuntimeError):
    pass


_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()
_down_until = 0.0
_last_warning = 0.0


def redis_url() -> str:
    return str(settings.TIERDESK_STATE_REDIS_URL or "")


def key(*parts: str) -> str:
    """A Redis key under ``TIERDESK_STATE_PREFIX`` (tests give each run its own)."""
    return ":".join((str(settings.TIERDESK_STATE_PREFIX), *parts))


def shared() -> bool:
    """True when state is shared through Redis, False for the in-process store."""
    return bool(redis_url())


def aredis() -> Any:
    """The asyncio Redis client of the running loop; ``RedisUnavailable`` while it is
    known to be down."""
    if time.monotonic() < _down_until:
        raise RedisUnavailable("redis marked down")
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None:
        import redis.asyncio as aioredis

        timeout = float(settings.TIERDESK_STATE_REDIS_TIMEOUT_S)
        client = aioredis.Redis.from_url(
            redis_url(),
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry_on_timeout=False,
            health_check_interval=0,
        )
        _clients[loop] = client
    return client


def mark_down(exc: BaseException) -> None:
    """Remember that Redis failed; log at most once per retry period."""
    global _down_until, _last_warning
    now = time.monotonic()
    _down_until = now + float(settings.TIERDESK_STATE_REDIS_RETRY_S)
    if now - _last_warning > 10:
        _last_warning = now
        logger.warning("shared state: Redis unavailable (%s); failing open", exc)


def reset() -> None:
    """Forget clients and the down mark (tests, after Redis restarts)."""
    global _down_until
    _down_until = 0.0
    _clients.clear()


async def run(func: Any) -> Any:
    """``await run(lambda r: r.get(k))``: one Redis call, failures become RedisUnavailable.

    A connection error is tried once more on a fresh connection: after a Redis restart
    the pooled connections are dead, but Redis itself is back."""
    import redis.exceptions

    client = aredis()
    for attempt in (1, 2):
        try:
            return await func(client)
        except redis.exceptions.ResponseError:
            raise  # a bug in our command, not an outage
        except Exception as exc:
            if attempt == 1 and isinstance(exc, redis.exceptions.ConnectionError):
                await client.connection_pool.disconnect()
                continue
            mark_down(exc)
            raise RedisUnavailable(str(exc)) from exc
    raise AssertionError("unreachable")
