"""Import intents, example utterances and reply templates from CSV, JSON or Rasa nlu.yml.

    manage.py intents_import shop_intents.csv --default-tier L3
    manage.py intents_import nlu.yml --dry-run           # what would change, nothing written
    manage.py intents_import intents.json --replace --retrain

A file with any error is rejected whole (each error with its line); see
docs/routing.md, "Bring your own intents".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from routing.interchange import Plan, intents_import
from routing.interchange_parse import format_guess
from routing.interchange_records import FORMATS, TIERS, ImportFailed


class Command(BaseCommand):
    help = "Import intents, utterances and reply templates (CSV, JSON, Rasa nlu.yml)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path)
        parser.add_argument("--format", choices=FORMATS, help="default: from the file name")
        parser.add_argument(
            "--language",
            default="auto",
            help="language of rows without one: en, zh, or auto (detected per text)",
        )
        parser.add_argument(
            "--default-tier",
            default="",
            choices=["", *TIERS],
            help="tier of new intents without one",
        )
        parser.add_argument(
            "--replace",
            action="store_true",
            help="the file's intents keep only the file's examples",
        )
        parser.add_argument(
            "--disable-missing",
            action="store_true",
            help="disable intents with examples that the file doesn't list",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="show the changes, write nothing"
        )
        parser.add_argument(
            "--retrain",
            action="store_true",
            help="train and store the classifier now, in this process (else the Celery task does)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["path"]
        try:
            content = path.read_bytes()
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc}") from exc
        try:
            plan = intents_import(
                content,
                fmt=options["format"] or format_guess(path.name),
                default_language=options["language"],
                default_tier=options["default_tier"],
                replace=options["replace"],
                disable_missing=options["disable_missing"],
                dry_run=options["dry_run"],
            )
        except ImportFailed as exc:
            for error in exc.errors:
                self.stderr.write(f"{path.name}: {error}")
            raise CommandError(f"{len(exc.errors)} error(s); nothing was imported") from exc
        self.plan_write(plan, dry_run=options["dry_run"])
        if options["retrain"] and not options["dry_run"]:
            from routing.services import router_model_train
            from routing.versioning import router_version_get

            result = router_model_train(
                version=router_version_get().version, trained_by="manage.py intents_import"
            )
            self.stdout.write(f"retrain: {result}")

    def plan_write(self, plan: Plan, *, dry_run: bool) -> None:
        for change in plan.changes:
            if change.action == "same" and not (
                change.add_utterances or change.remove_utterances or change.add_templates
            ):
                continue
            self.stdout.write(
                f"  {change.action:6} {change.name} ({change.tier}): "
                f"+{change.add_utterances} -{change.remove_utterances} examples, "
                f"+{change.add_templates} ~{change.change_templates} templates"
            )
        for name in plan.disable:
            self.stdout.write(f"  disable {name}")
        totals = ", ".join(f"{k} {v}" for k, v in plan.totals.items())
        extra = f"; {plan.skipped} entries skipped" if plan.skipped else ""
        extra += f"; {plan.duplicates} duplicate examples" if plan.duplicates else ""
        self.stdout.write(("would apply: " if dry_run else "applied: ") + totals + extra)
