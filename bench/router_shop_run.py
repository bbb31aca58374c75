"""A new shop's router set through the product's import and retrain path, beside two
baselines (bench/router_shop.py); merged into bench/results/router_shop.json.

Replaces the router's intents: run it on a throw-away database only
(scripts/eval-router-shop.sh makes one).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = "A shop's own intents through the import/retrain path, beside two baselines."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("shop", help="a folder of bench/sets/router/")
        parser.add_argument("--out", type=Path, help="merge into this JSON report")
        parser.add_argument(
            "--i-know-this-replaces-the-intents",
            action="store_true",
            dest="confirmed",
            help="required outside TIERDESK_ENV=test: every intent is deleted",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        from bench.router_shop import shop_evaluate

        if settings.TIERDESK_ENV != "test" and not options["confirmed"]:
            raise CommandError("this deletes every intent: use a throw-away database")
        try:
            report = shop_evaluate(options["shop"], log=lambda line: self.stdout.write(line))
        except FileNotFoundError as exc:
            raise CommandError(str(exc)) from exc
        report["timestamp"] = datetime.now(UTC).isoformat(timespec="seconds")
        self.stdout.write("figures: " + json.dumps(report["figures"], indent=1))
        self.stdout.write("verdicts: " + json.dumps(report["verdicts"]))
        out: Path | None = options["out"]
        if out is not None:
            existing = json.loads(out.read_text()) if out.exists() else {}
            existing[options["shop"]] = {k: v for k, v in report.items() if k != "figures"}
            existing.setdefault("figures", {}).update(report["figures"])
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(existing, indent=2, ensure_ascii=False) + "\n")
            self.stdout.write(f"wrote {out}")
