#!/usr/bin/env bash
# Run the product on the embedded default: the model server (the local models in their
# own process, restarted if it dies), then a Celery worker and Daphne, which reach it
# over HTTP; SQLite, in-memory channel layer, kombu filesystem broker. Ctrl-C stops all.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# The demo shop's mode: the page at / signs in a demo shopper (/?as=<customer_id>).
export TIERDESK_DEMO_SHOP=${TIERDESK_DEMO_SHOP:-true}
HOST=${TIERDESK_HOST:-127.0.0.1}
PORT=${TIERDESK_PORT:-8000}
mkdir -p var/log
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

.venv/bin/python manage.py demo_admin
# The model server first (docs/deployment.md, "The model server"): --supervise starts it
# again whenever it dies. TIERDESK_MODELS=inprocess loads the models inside Daphne instead.
if [ "${TIERDESK_MODELS:-server}" = server ]; then
  MS_STATUS=var/run/modelserver.json
  mkdir -p var/run && rm -f "$MS_STATUS"
  .venv/bin/python manage.py modelserver --supervise --status-file "$MS_STATUS" >var/log/modelserver.log 2>&1 &
  pids+=($!)
  echo "Starting the model server (loading and warming up the models; var/log/modelserver.log)..."
  for _ in $(seq 1 600); do
    [ -f "$MS_STATUS" ] && break
    if ! kill -0 "${pids[0]}" 2>/dev/null; then echo "model server exited:"; tail -n 30 var/log/modelserver.log; exit 1; fi
    sleep 1
  done
  [ -f "$MS_STATUS" ] || { echo "model server not ready after 600s:"; tail -n 30 var/log/modelserver.log; exit 1; }
  echo "  model server ready: $(cat "$MS_STATUS")"
fi
# -B: the worker also runs Celery beat (the gray-release schedule and guardrails tick
# every minute). It takes the default queue: a shop admin's articles, beat's tasks.
.venv/bin/celery -A config worker -B --schedule=var/celerybeat-schedule -Q celery -n main@%h --loglevel=WARNING --concurrency=1 >var/log/worker.log 2>&1 &
pids+=($!)
# A second worker for the bulk queue: the demo knowledge base's ingestion, generated
# questions and card drafting, so an admin's first article never waits behind them.
.venv/bin/celery -A config worker -Q "${TIERDESK_KB_BULK_QUEUE:-bulk}" -n bulk@%h --loglevel=WARNING --concurrency=1 >var/log/worker-bulk.log 2>&1 &
pids+=($!)
.venv/bin/daphne -b "$HOST" -p "$PORT" config.asgi:application >var/log/daphne.log 2>&1 &
DAPHNE_PID=$!
pids+=("$DAPHNE_PID")

echo "Starting Daphne and warming up (details in var/log/daphne.log)..."
# Progress: /readyz names the warm-up's stage (inference/warmup.py); print each change.
# Give up only when the stage stands still for STALL_S (a busy machine is slow, not stuck).
STALL_S=600
started=$SECONDS changed=$SECONDS last=""
while :; do
  body=$(curl -sS "http://$HOST:$PORT/readyz" 2>/dev/null || true)
  stage=$(printf '%s' "$body" | sed -n 's/.*"stage": "\([^"]*\)".*/\1/p')
  [ -n "$body" ] && [ -z "$stage" ] && stage="starting"
  [ -z "$body" ] && stage="starting Daphne"
  if [ "$stage" != "$last" ]; then
    printf '  [%3ds] %s\n' "$((SECONDS - started))" "$stage"
    last=$stage changed=$SECONDS
  fi
  case "$stage" in ready|failed) break ;; esac
  if ! kill -0 "$DAPHNE_PID" 2>/dev/null; then echo "Daphne exited:"; tail -n 30 var/log/daphne.log; exit 1; fi
  if [ $((SECONDS - changed)) -ge "$STALL_S" ]; then echo "no progress for ${STALL_S}s"; break; fi
  sleep 1
done
curl -fsS "http://$HOST:$PORT/readyz" >/dev/null || { echo "not ready:"; curl -sS "http://$HOST:$PORT/readyz"; exit 1; }
# On a fresh install the worker is still ingesting the demo knowledge base: wait for it,
# or the first questions are answered from part of it (knowledge_wait's docstring).
.venv/bin/python manage.py knowledge_wait --timeout 900
echo "Tierdesk is ready."
echo "  Demo shop with the chat widget: http://$HOST:$PORT/"
echo "  Django admin (demo login admin / admin): http://$HOST:$PORT/admin/"
echo "  Operator console (demo login operator / operator): http://$HOST:$PORT/operators/"
echo "  Agent desk, human handoff (demo login agent / agent): http://$HOST:$PORT/desk/"
wait -n "${pids[@]}"
