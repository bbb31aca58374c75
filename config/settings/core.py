"""The deployment shape: where the checkout and its var/ are, which .env was loaded,
and which of development, production or test this process runs as."""

from __future__ import annotations

import sys
from pathlib import Path

from .env import ImproperlyConfiguredEnv, env_str, load_dotenv

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

# Test runs: keep pytest from importing heavy models at settings time.
TESTING = "pytest" in sys.modules or TIERDESK_ENV == "test"
