"""Per-variant and per-tier figures from the stored minutes, with the cost-saving
ratio against sending everything to L3, as JSON."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Release metrics over the last --hours: p50/p95, errors, CSAT, cost vs all-L3."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--hours", type=int, default=24)

    def handle(self, *args: Any, **options: Any) -> None:
        from releases import clock
        from releases.selectors import dashboard, release_overview

        board = dashboard(until=clock.now(), hours=options["hours"])
        overview = release_overview()
        report = {
            "hours": options["hours"],
            "stable": overview.stable.name if overview.stable else None,
            "candidate": (
                {"name": overview.candidate.name, "weight": overview.candidate.weight}
                if overview.candidate
                else None
            ),
            "all": board.total.summary(),
            "by_variant": {k: w.summary() for k, w in sorted(board.by_variant.items())},
            "by_tier": {k: w.summary() for k, w in sorted(board.by_tier.items())},
        }
        self.stdout.write(json.dumps(report, indent=2))
