#!/usr/bin/env bash
# The test suite runs on the real PostgreSQL and Redis on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
export DATABASE_URL=${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}
export REDIS_URL=${TEST_REDIS_URL:-redis://127.0.0.1:6379/1}
export TIERDESK_ENV=test
# One test database per run, so concurrent runs never collide.
export TIERDESK_TEST_DB_NAME=${TIERDESK_TEST_DB_NAME:-test_tierdesk_$$}
export TIERDESK_WARMUP_ON_START=false
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec .venv/bin/python -m pytest "$@"
