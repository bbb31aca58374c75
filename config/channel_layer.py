"""The Redis channel layer, made to wait out a Redis outage.

Every consumer listens on its own channel (``channels`` starts a receive loop per
connection). In ``channels_redis`` a lost Redis connection makes ``receive()`` raise,
and ``channels`` lets that exception end the consumer: every open chat would be
dropped with a server error the moment Redis restarts. Chats don't need Redis to go on
(limits, breakers and the cache fail open, docs/resilience.md), so here ``receive()``
retries with capped exponential backoff instead (logging once per outage) and blocks on
Redis again as soon as it is back. ``send``/``group_send`` still raise: the caller decides.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from channels_redis.core import RedisChannelLayer
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

RETRY_FIRST_S = 0.2
RETRY_MAX_S = 5.0


class ResilientRedisChannelLayer(RedisChannelLayer):
    async def receive(self, channel: str) -> dict[str, Any]:
        delay = RETRY_FIRST_S
        failing = False
        while True:
            try:
                message: dict[str, Any] = await super().receive(channel)
            except (RedisError, OSError) as exc:
                if not failing:
                    logger.warning("channel layer: Redis unavailable (%s); retrying", exc)
                    failing = True
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX_S)
                continue
            return message
