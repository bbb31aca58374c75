#!/usr/bin/env bash
# Router evaluation, against a throw-away SQLite database (no server needed):
# 1. the labelled held-out set (bench/sets/router/demo/heldout.tsv) and the handoff sets on the
#    shipped default router data (intents, rules, examples), merged into
#    bench/results/router.json ("heldout_eval" and the flat "figures"); pass --json PATH
#    to keep the whole report;
# 2. the development benchmark BANKING77 (third_party/banking77) through the product's
#    import and retrain path, beside three baselines, merged into
#    bench/results/router.json ("banking77" and the flat "figures").
# Both with the product's default classifier (sentence embeddings on); BANKING77 also
# with the embedding adapter switched the other way (TIERDESK_ROUTER_FINETUNE). To evaluate a
# live database's (admin-edited) router instead: .venv/bin/python -m bench.command router_eval
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export TIERDESK_VAR_DIR="$tmp" DATABASE_URL= REDIS_URL= CELERY_BROKER_URL=memory://
export TIERDESK_ENV=test TIERDESK_WARMUP_ON_START=false
export TIERDESK_ROUTER_EMBEDDINGS="${TIERDESK_ROUTER_EMBEDDINGS:-true}"
.venv/bin/python manage.py migrate --noinput -v 0
.venv/bin/python -m bench.command router_eval --seed --figures bench/results/router.json "$@"
exec .venv/bin/python -m bench.command router_banking77 --out bench/results/router.json
