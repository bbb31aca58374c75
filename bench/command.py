"""Run one of the router's evaluation commands (Django management commands that live
in bench/, not in the product's apps):

    .venv/bin/python -m bench.command router_eval --seed --figures bench/results/router.json
    .venv/bin/python -m bench.command router_banking77 --out bench/results/router.json
    .venv/bin/python -m bench.command handoff_cv --seed --honest

Same settings and options as ``manage.py``; against a live database unless the
environment points at a throw-away one (scripts/eval-router.sh makes one).
"""

from __future__ import annotations

import importlib
import os
import sys

COMMANDS = {
    "router_eval": "bench.router_eval",
    "router_banking77": "bench.router_banking77",
    "handoff_cv": "bench.handoff_cv_run",
    "router_shop": "bench.router_shop_run",
}


def main(argv: list[str]) -> None:
    if not argv or argv[0] not in COMMANDS:
        sys.exit(f"usage: python -m bench.command {{{','.join(COMMANDS)}}} [options]")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    module = importlib.import_module(COMMANDS[argv[0]])
    module.Command().run_from_argv(["manage.py", *argv])


if __name__ == "__main__":
    main(sys.argv[1:])
