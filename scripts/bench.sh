#!/usr/bin/env bash
# The L1 benchmark (docs/benchmarks.md): starts its own Daphne on a free 127.0.0.1 port
# against PostgreSQL database tierdesk_bench and Redis db 2, runs WebSocket shoppers at
# 1 and 20 sessions next to bare llama.cpp, and writes bench/results/l1.json.
# Bounded: fixed message counts, every wait has a timeout; about 5 minutes on 2 idle cores, capped at 30.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/services.sh >/dev/null
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec timeout --signal=TERM 1800 .venv/bin/python -m bench.l1 "$@"
