"""The development benchmark (BANKING77) through the product's import and retrain path,
beside three baselines (``make eval-router``; bench/banking77.py).

Replaces the router's intents: run it on a throw-away database only
(scripts/eval-router.sh makes one).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = "BANKING77 through the product's import/retrain path, beside three baselines."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--variants",
            nargs="+",
            default=["fewshot10", "full", "oos"],
            choices=["fewshot10", "full", "oos"],
        )
        parser.add_argument("--out", type=Path, help="merge into this JSON report (router.json)")
        parser.add_argument(
            "--i-know-this-replaces-the-intents",
            action="store_true",
            dest="confirmed",
            help="required outside TIERDESK_ENV=test: every intent is deleted",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        from bench.banking77 import banking77_evaluate

        if settings.TIERDESK_ENV != "test" and not options["confirmed"]:
            raise CommandError("this deletes every intent: use a throw-away database")
        report = banking77_evaluate(
            variants=tuple(options["variants"]), log=lambda line: self.stdout.write(line)
        )
        report["timestamp"] = datetime.now(UTC).isoformat(timespec="seconds")
        report["embeddings_setting"] = settings.TIERDESK_ROUTER_EMBEDDINGS
        report["finetune_setting"] = settings.TIERDESK_ROUTER_FINETUNE
        self.stdout.write("figures: " + json.dumps(report["figures"], indent=1))
        self.stdout.write("verdicts: " + json.dumps(report["verdicts"]))
        out: Path | None = options["out"]
        if out is not None:
            existing = json.loads(out.read_text()) if out.exists() else {}
            existing["banking77"] = {k: v for k, v in report.items() if k != "figures"}
            existing.setdefault("figures", {}).update(report["figures"])
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(existing, indent=2, ensure_ascii=False) + "\n")
            self.stdout.write(f"wrote {out}")
