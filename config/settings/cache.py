"""Redis when REDIS_URL is set: the channel layer and the cache; else in-memory ones."""

from __future__ import annotations

from typing import Any

from .env import env_str

# --- Redis: channel layer, cache, Celery --------------------------------------------------
REDIS_URL = env_str("REDIS_URL", "")
if REDIS_URL:
    CHANNEL_LAYERS: dict[str, Any] = {
        "default": {
            "BACKEND": "config.channel_layer.ResilientRedisChannelLayer",
            # redis-py 8 defaults socket_timeout to 5 s, the same as channels-redis'
            # 5 s BZPOPMIN: the read then times out before Redis answers. Give reads
            # more time than the blocking pop.
            "CONFIG": {
                "hosts": [{"address": REDIS_URL, "socket_timeout": 15, "socket_connect_timeout": 3}]
            },
        }
    }
    CACHES: dict[str, Any] = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "TIMEOUT": 3600,
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": "tierdesk",
        }
    }
