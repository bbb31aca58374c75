#!/usr/bin/env bash
# The RAG benchmark (bench/rag.py, docs/knowledge.md): PostgreSQL database
# tierdesk_bench_rag (dropped and recreated), Redis db 3, Daphne on a free 127.0.0.1 port.
# Bounded: fixed counts and timeouts; about 10-15 minutes on 2 shared cores.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/services.sh >/dev/null
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec timeout --signal=TERM 2400 .venv/bin/python -m bench.rag "$@"
