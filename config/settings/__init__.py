"""Tierdesk settings, composed from one module per concern; only ``env`` reads the environment.

Two shapes from the same modules:
- the embedded default (no variables set): SQLite, the in-memory channel layer, a
  local-memory cache and Celery on kombu's filesystem transport, so ``make run``
  needs no server at all;
- production (``DATABASE_URL`` and ``REDIS_URL`` set): PostgreSQL through psycopg 3,
  channels-redis, the Redis cache and Celery on Redis.

Each module below reads its own variables through ``config.settings.env``; a module
that needs another's value imports it from that module. Every variable is listed with
its default in ``.env.example``.
"""

from __future__ import annotations

from .cache import *  # noqa: F403
from .chatbot import *  # noqa: F403
from .core import *  # noqa: F403
from .database import *  # noqa: F403
from .desk import *  # noqa: F403
from .inference import *  # noqa: F403
from .knowledge import *  # noqa: F403
from .releases import *  # noqa: F403
from .resilience import *  # noqa: F403
from .routing import *  # noqa: F403
from .security import *  # noqa: F403
from .tasks import *  # noqa: F403
from .web import *  # noqa: F403
