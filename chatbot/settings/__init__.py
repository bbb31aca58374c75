"""Tierdesk settings: the only module that reads the environment (through ``env``).

Two shapes from one file:
- the embedded default (no variables set): SQLite, the in-memory channel layer, a
  local-memory cache and Celery on kombu's filesystem transport, so ``make run``
  needs no server at all;
- production (``DATABASE_URL`` and ``REDIS_URL`` set): PostgreSQL through psycopg 3,
  channels-redis, the Redis cache and Celery on Redis.

Every variable is listed with its default in ``.env.example``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import dj_database_url

from .env import (
    ImproperlyConfiguredEnv,
    env_bool,
    env_float,
    env_int,
    env_list,
    env_str,
    load_dotenv,
)

BASE_DIR = Path(__file__).resolve().parent.parent.parent
load_dotenv(BASE_DIR / ".env")

# --- deployment shape -----------------------------------------------------------------
TIERDESK_ENV = env_str("TIERDESK_ENV", "development")  # development | production | test
if TIERDESK_ENV not in {"development", "production", "test"}:
    raise ImproperlyConfiguredEnv(f"TIERDESK_ENV={TIERDESK_ENV!r}: use development|production|test")
PRODUCTION = TIERDESK_ENV == "production"

VAR_DIR = Path(env_str("TIERDESK_VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

_DEV_SECRET = "dev-only-insecure-secret-key-change-me-0123456789abcdefghijklmnop"
SECRET_KEY = env_str("DJANGO_SECRET_KEY", "" if PRODUCTION else _DEV_SECRET)
# The shop signs shopper tokens with this key (HMAC-SHA256); see docs/identity.md.
TIERDESK_SHOPPER_TOKEN_KEY = env_str(
    "TIERDESK_SHOPPER_TOKEN_KEY", "" if PRODUCTION else _DEV_SECRET
)
if PRODUCTION:
    # Secrets come only from the environment: refuse to start without them rather
    # than run a shop on a key that is printed in our source.
    missing = [
        name
        for name, value in (
            ("DJANGO_SECRET_KEY", SECRET_KEY),
            ("TIERDESK_SHOPPER_TOKEN_KEY", TIERDESK_SHOPPER_TOKEN_KEY),
        )
        if not value or value == _DEV_SECRET
    ]
    if missing:
        raise ImproperlyConfiguredEnv(
            "production refuses to start without secrets: set " + ", ".join(missing)
        )

DEBUG = env_bool("DJANGO_DEBUG", TIERDESK_ENV == "development")
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "chatbot",
    "chatbot.orders",
    "routing",
    "knowledge",
    "inference",
    "frontend",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "chatbot.urls"
ASGI_APPLICATION = "chatbot.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- database -------------------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL", "")
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        # Health checks let a connection that PostgreSQL dropped (restart, failover)
        # be replaced on the next request instead of failing it.
        DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    # Concurrent test runs on one PostgreSQL each need their own test database.
    if env_str("TIERDESK_TEST_DB_NAME"):
        DATABASES["default"]["TEST"] = {"NAME": env_str("TIERDESK_TEST_DB_NAME")}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(VAR_DIR / "tierdesk.sqlite3"),
            # The embedded default shares one file between Daphne's threads and the
            # Celery worker; wait for the write lock instead of failing at once.
            "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE"},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis: channel layer, cache, Celery --------------------------------------------------
REDIS_URL = env_str("REDIS_URL", "")
if REDIS_URL:
    CHANNEL_LAYERS: dict[str, Any] = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
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

CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL or "filesystem://")
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
    }
else:
    # The visibility timeout must outlast the longest task, or Redis re-delivers a
    # task that is still running (ingestion of a large PDF is the longest).
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600)
    }
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

# --- static files, auth, i18n ---------------------------------------------------------------
STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "static"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True
MEDIA_ROOT = VAR_DIR / "media"
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
LOGIN_URL = "/admin/login/"

SESSION_COOKIE_SECURE = PRODUCTION
CSRF_COOKIE_SECURE = PRODUCTION
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", PRODUCTION)
SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", 31536000 if PRODUCTION else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = PRODUCTION
SECURE_HSTS_PRELOAD = PRODUCTION
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if PRODUCTION else None

LOGGING: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("TIERDESK_LOG_LEVEL", "INFO")},
    # Daphne logs every connect/disconnect at INFO; under load that is the bottleneck.
    "loggers": {"daphne": {"level": "WARNING"}, "django.channels.server": {"level": "WARNING"}},
}

# --- chat protocol --------------------------------------------------------------------
TIERDESK_MAX_MESSAGE_CHARS = env_int("TIERDESK_MAX_MESSAGE_CHARS", 2000)
# A frame larger than this is refused before it is parsed (bytes, whole JSON frame).
TIERDESK_MAX_FRAME_BYTES = env_int("TIERDESK_MAX_FRAME_BYTES", 16384)
TIERDESK_HISTORY_ON_CONNECT = env_int("TIERDESK_HISTORY_ON_CONNECT", 50)
# Per-chunk pacing in the widget (SPEC: 50 ms, 0 disables it). Sent to the client.
TIERDESK_STREAM_PACING_MS = env_int("TIERDESK_STREAM_PACING_MS", 50)
# How long a turn may take end to end before the reply is cut and marked incomplete.
TIERDESK_TURN_TIMEOUT_S = env_float("TIERDESK_TURN_TIMEOUT_S", 60.0)

# --- routing --------------------------------------------------------------------------
# Below this classifier probability the bot asks a clarifying question instead of guessing.
TIERDESK_ROUTER_CLARIFY_THRESHOLD = env_float("TIERDESK_ROUTER_CLARIFY_THRESHOLD", 0.45)

# --- order system ---------------------------------------------------------------------
# "django": the demo shop's own tables. "http": a shop's real API (docs/order-api.md).
TIERDESK_ORDER_BACKEND = env_str("TIERDESK_ORDER_BACKEND", "django")
TIERDESK_ORDER_API_URL = env_str("TIERDESK_ORDER_API_URL", "")
TIERDESK_ORDER_API_KEY = env_str("TIERDESK_ORDER_API_KEY", "")
TIERDESK_ORDER_API_TIMEOUT_S = env_float("TIERDESK_ORDER_API_TIMEOUT_S", 5.0)
ORDER_SERVICE = {
    "django": "chatbot.orders.backends.DjangoOrderService",
    "http": "chatbot.orders.backends.HttpOrderService",
}[TIERDESK_ORDER_BACKEND]
TIERDESK_SHOPPER_TOKEN_MAX_AGE_S = env_int("TIERDESK_SHOPPER_TOKEN_MAX_AGE_S", 3600)

# --- inference ------------------------------------------------------------------------
TIERDESK_MODEL_DIR = Path(env_str("TIERDESK_MODEL_DIR", str(VAR_DIR / "models")))
TIERDESK_THREADS = env_int("TIERDESK_THREADS", 2)
# Load models and warm them up when a server process starts. Off for management
# commands and most tests, which load a model only when they use one.
TIERDESK_WARMUP_ON_START = env_bool("TIERDESK_WARMUP_ON_START", True)
TIERDESK_WARMUP_REQUESTS = env_int("TIERDESK_WARMUP_REQUESTS", 5)
# Sampling for the fast L1 phrasing model: low temperature keeps facts stable.
TIERDESK_FAST_TEMPERATURE = env_float("TIERDESK_FAST_TEMPERATURE", 0.2)
TIERDESK_FAST_MAX_TOKENS = env_int("TIERDESK_FAST_MAX_TOKENS", 64)
TIERDESK_FALLBACK_MAX_TOKENS = env_int("TIERDESK_FALLBACK_MAX_TOKENS", 200)
TIERDESK_FACT_GUARD = env_bool("TIERDESK_FACT_GUARD", True)

# Backends declared in settings, ChannelLayerManager style: each role names a backend
# class and its config; a role may instead be an alias of another role.
INFERENCE_BACKENDS: dict[str, dict[str, Any]] = {
    "fast": {
        "BACKEND": "inference.backends.llamacpp.LlamaCppBackend",
        "CONFIG": {
            "model": env_str("TIERDESK_FAST_MODEL", "gemma3-270m-q4km"),
            "path": env_str("TIERDESK_FAST_MODEL_PATH", ""),
            "sha256": env_str("TIERDESK_FAST_MODEL_SHA256", ""),
            "n_parallel": env_int("TIERDESK_FAST_PARALLEL", 8),
            "n_ctx_per_slot": env_int("TIERDESK_FAST_CTX", 1024),
        },
    },
    "fallback": {
        "BACKEND": "inference.backends.llamacpp.LlamaCppBackend",
        "CONFIG": {
            "model": env_str("TIERDESK_FALLBACK_MODEL", "qwen2.5-0.5b-instruct-q4km"),
            "path": env_str("TIERDESK_FALLBACK_MODEL_PATH", ""),
            "sha256": env_str("TIERDESK_FALLBACK_MODEL_SHA256", ""),
            "n_parallel": env_int("TIERDESK_FALLBACK_PARALLEL", 4),
            "n_ctx_per_slot": env_int("TIERDESK_FALLBACK_CTX", 2048),
        },
    },
    # Until the L3 remote tier lands, the largest local model serves "large".
    "large": {"ALIAS": env_str("TIERDESK_LARGE_ALIAS", "fallback")},
}
# Roles that must be loaded and warmed up before the server reports ready.
TIERDESK_WARM_ROLES = env_list("TIERDESK_WARM_ROLES", ["fast", "fallback"])

# Test runs: keep pytest from importing heavy models at settings time.
TESTING = "pytest" in sys.modules or TIERDESK_ENV == "test"
