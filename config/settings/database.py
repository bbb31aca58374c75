"""The database: PostgreSQL when DATABASE_URL is set, else SQLite in var/."""

from __future__ import annotations

import dj_database_url

from .core import VAR_DIR
from .env import env_str

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
