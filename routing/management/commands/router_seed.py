"""Seed the router's default data and bring it up to this release's seed
(routing/seed.py): missing rows are created, rows nobody edited follow the shipped
seed, rows edited in the admin are kept and listed.

    manage.py router_seed                                  # seed and report
    manage.py router_seed --dry-run                        # report only
    manage.py router_seed --reset rule:comparison order_status.pending.en ...
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from routing.seed import seed_labels_resolve
from routing.seed_templates import router_seed


class Command(BaseCommand):
    help = (
        "Seed the router's intents, rules, slot patterns and reply templates; update the "
        "rows nobody edited to this release's seed and list the edited ones it keeps."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--reset",
            nargs="+",
            default=[],
            metavar="NAME",
            help="set these rows to the shipped seed even if edited (their edits are lost): "
            "rule:NAME, slot:NAME, intent:NAME, template:INTENT.KEY.LANGUAGE, or the "
            "name alone when only one kind of row has it",
        )
        parser.add_argument("--dry-run", action="store_true", help="report; write nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            reset = seed_labels_resolve(options["reset"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        report = router_seed(reset=reset, dry_run=options["dry_run"])
        if options["dry_run"]:
            self.stdout.write("dry run: what a seed would do; nothing was written")
        created = ", ".join(f"{n} {kind}s" for kind, n in sorted(report.created.items()) if n)
        self.stdout.write(f"created: {created or 'nothing'}")
        for title, labels in (
            ("reset to the shipped seed", report.reset),
            ("updated to the shipped seed", report.updated),
            ("from before seed tracking, equal to the shipped seed (now tracked)", report.adopted),
            ("kept, edited in the admin", report.edited),
            (
                "kept, differ from the shipped seed, which changed since they were seeded "
                "(or they predate seed tracking); --reset NAME takes the shipped version",
                report.diverged,
            ),
        ):
            self.stdout.write(f"{title}: {len(labels)}")
            for label in labels:
                self.stdout.write(f"  {label}")
