"""Celery: the broker (Redis, or kombu's filesystem transport for the embedded
default), task delivery and the beat schedule."""

from __future__ import annotations

from typing import Any

from .cache import REDIS_URL
from .chatbot import TIERDESK_CATALOGUE_SYNC_S
from .core import VAR_DIR
from .env import env_bool, env_int, env_str
from .knowledge import TIERDESK_KB_SWEEP_S
from .releases import TIERDESK_RELEASE_TICK_S

CELERY_BROKER_URL = env_str("CELERY_BROKER_URL") or REDIS_URL or "filesystem://"
_BROKER_DIR = VAR_DIR / "celery-broker"
if CELERY_BROKER_URL == "filesystem://":
    _BROKER_DIR.mkdir(parents=True, exist_ok=True)
    # kombu's filesystem transport: a server-less broker for the embedded default.
    # In and out share one folder so the web process and the worker see the same queue.
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, Any] = {
        "data_folder_in": str(_BROKER_DIR),
        "data_folder_out": str(_BROKER_DIR),
        "processed_folder": str(_BROKER_DIR),
        "store_processed": False,
        # Broadcast/control messages; kombu's default is ./control in the cwd.
        "control_folder": str(_BROKER_DIR / "control"),
    }
else:
    # The visibility timeout must outlast the longest task, or Redis re-delivers a
    # task that is still running (ingestion of a large PDF is the longest).
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600)
    }
# The queue of everything not sent elsewhere (a shop admin's articles, beat's tasks);
# the demo seed's articles go to TIERDESK_KB_BULK_QUEUE.
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_TASK_DEFAULT_QUEUE", "celery")
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

CELERY_BEAT_SCHEDULE: dict[str, Any] = {
    "release-tick": {"task": "releases.release_tick", "schedule": TIERDESK_RELEASE_TICK_S},
    "botcheck-purge": {"task": "chatbot.botcheck_purge", "schedule": 86400.0},
    "privacy-purge": {"task": "chatbot.privacy_purge", "schedule": 86400.0},
    "knowledge-ingest-sweep": {"task": "knowledge.ingest_sweep", "schedule": TIERDESK_KB_SWEEP_S},
    "handoff-requeue": {"task": "desk.requeue_abandoned", "schedule": 15.0},
}
if TIERDESK_CATALOGUE_SYNC_S > 0:
    CELERY_BEAT_SCHEDULE["catalogue-sync"] = {
        "task": "orders.catalogue_sync",
        "schedule": TIERDESK_CATALOGUE_SYNC_S,
    }
