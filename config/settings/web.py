"""The Django project: installed apps, middleware, templates, static files, languages
and logging."""

from __future__ import annotations

from typing import Any

from .core import BASE_DIR, VAR_DIR
from .env import env_json_object, env_str

INSTALLED_APPS = [
    "daphne",
    # The project's own system checks (config/checks.py).
    "config.apps.TierdeskConfig",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    # Staff login throttling and the Content-Security-Policy (config/settings/security.py).
    "axes",
    "csp",
    "desk",
    "chatbot",
    "chatbot.orders",
    "releases",
    "routing",
    "knowledge",
    "shop",
    "inference",
    "frontend",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
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
    # Last, as django-axes asks: it turns a locked-out login into the lockout page.
    "axes.middleware.AxesMiddleware",
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

# --- static files, auth, i18n ---------------------------------------------------------------
STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "static"
# Uploaded files (the knowledge base's documents) are on local disk under MEDIA_ROOT by
# default, which only works while the web processes and the Celery workers share that
# disk. With workers on other machines, every process must see the same files: set
# TIERDESK_MEDIA_STORAGE to a Django storage class (django-storages' S3, GCS or Azure
# backend, installed beside Tierdesk) and TIERDESK_MEDIA_STORAGE_OPTIONS to its OPTIONS
# as a JSON object (docs/deployment.md, "Uploaded files").
TIERDESK_MEDIA_STORAGE = env_str(
    "TIERDESK_MEDIA_STORAGE", "django.core.files.storage.FileSystemStorage"
)
TIERDESK_MEDIA_STORAGE_OPTIONS = env_json_object("TIERDESK_MEDIA_STORAGE_OPTIONS")
STORAGES = {
    "default": {"BACKEND": TIERDESK_MEDIA_STORAGE, "OPTIONS": TIERDESK_MEDIA_STORAGE_OPTIONS},
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
