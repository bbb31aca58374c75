#!/usr/bin/env bash
# A new shop's router set (bench/sets/router/<shop>/: intents.json, test.tsv) through
# the product's import and retrain path, beside TF-IDF + LR and MiniLM + LR, against a
# throw-away SQLite database; merged into bench/results/router_shop.json (per shop and
# the flat "figures"). Usage: scripts/eval-router-shop.sh pawpantry
set -euo pipefail
cd "$(dirname "$0")/.."
shop="${1:?usage: scripts/eval-router-shop.sh SHOP (a folder of bench/sets/router/)}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export TIERDESK_VAR_DIR="$tmp" DATABASE_URL= REDIS_URL= CELERY_BROKER_URL=memory://
export TIERDESK_ENV=test TIERDESK_WARMUP_ON_START=false
export TIERDESK_ROUTER_EMBEDDINGS="${TIERDESK_ROUTER_EMBEDDINGS:-true}"
.venv/bin/python manage.py migrate --noinput -v 0
exec .venv/bin/python -m bench.command router_shop "$shop" --out bench/results/router_shop.json
