"""Secrets, hosts and the HTTPS settings; production refuses to start without its secrets."""

from __future__ import annotations

from .core import PRODUCTION, TIERDESK_ENV
from .env import ImproperlyConfiguredEnv, env_bool, env_int, env_list, env_str

DEV_SECRET_KEY = "dev-only-insecure-secret-key-change-me-0123456789abcdefghijklmnop"
# An empty value (as in .env.example) means "not set", never an empty key.
SECRET_KEY = env_str("DJANGO_SECRET_KEY") or ("" if PRODUCTION else DEV_SECRET_KEY)
# The shop signs shopper tokens with this key (HMAC-SHA256); see docs/identity.md.
TIERDESK_SHOPPER_TOKEN_KEY = env_str("TIERDESK_SHOPPER_TOKEN_KEY") or (
    "" if PRODUCTION else DEV_SECRET_KEY
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
        if not value or value == DEV_SECRET_KEY
    ]
    if missing:
        raise ImproperlyConfiguredEnv(
            "production refuses to start without secrets: set " + ", ".join(missing)
        )

DEBUG = env_bool("DJANGO_DEBUG", TIERDESK_ENV == "development")
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

SESSION_COOKIE_SECURE = PRODUCTION
CSRF_COOKIE_SECURE = PRODUCTION
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", PRODUCTION)
SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", 31536000 if PRODUCTION else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = PRODUCTION
SECURE_HSTS_PRELOAD = PRODUCTION
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if PRODUCTION else None
