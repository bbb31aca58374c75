#!/usr/bin/env bash
# The load test (docs/benchmarks.md, "Load"): Daphne, PostgreSQL (tierdesk_bench), the
# Redis channel layer (db 2), a Celery worker and a llama.cpp server playing the L3 API,
# all on 127.0.0.1; WebSocket shoppers stepped up to 200 concurrent sessions, then the
# same mix with routing off. Writes bench/results/load.json.
# Bounded: fixed session and message counts, every wait and every step has a deadline;
# about 22 minutes by default on 2 cores (--quick: about 5), capped at 45.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/services.sh >/dev/null
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec timeout --signal=TERM 2700 .venv/bin/python -m bench.load "$@"
