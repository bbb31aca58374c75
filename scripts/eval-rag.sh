#!/usr/bin/env bash
# RAG evaluation (docs/knowledge.md): a fresh embedded (SQLite) database in var/eval-rag,
# the demo knowledge base ingested with the real embedder and fast-model summaries, then
# retrieval metrics per method and language and the groundedness of real answers.
# Figures are merged into bench/results/rag.json under "evaluation".
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export TIERDESK_VAR_DIR=${TIERDESK_EVAL_VAR_DIR:-$PWD/var/eval-rag}
export TIERDESK_MODEL_DIR=${TIERDESK_MODEL_DIR:-$PWD/var/models}
export TIERDESK_WARMUP_ON_START=false TIERDESK_LOG_LEVEL=WARNING CELERY_TASK_ALWAYS_EAGER=false
unset DATABASE_URL REDIS_URL
rm -rf "$TIERDESK_VAR_DIR"
mkdir -p "$TIERDESK_VAR_DIR"
.venv/bin/python manage.py migrate --verbosity 0
exec timeout --signal=TERM 3000 .venv/bin/python -m bench.rag_eval "$@"
