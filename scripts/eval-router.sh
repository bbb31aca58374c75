#!/usr/bin/env bash
# Router evaluation on the labelled held-out set (routing/eval/heldout.tsv), against a
# throw-away SQLite database seeded with the default router data, so the figures are
# the shipped defaults' and no server is needed. Pass --json PATH to keep the report.
# To evaluate a live database's (admin-edited) router instead:
#   .venv/bin/python manage.py router_eval
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export TIERDESK_VAR_DIR="$tmp" DATABASE_URL= REDIS_URL= CELERY_BROKER_URL=memory://
export TIERDESK_ENV=test TIERDESK_WARMUP_ON_START=false
.venv/bin/python manage.py migrate --noinput -v 0
exec .venv/bin/python manage.py router_eval --seed "$@"
