"""Give the operator console six hours of history to show (demo and screenshots).

Creates an "operator" user (password "operator") in the operators group, an earlier
candidate that the guardrails rolled back, and a running candidate at 15% with
per-minute metrics, ratings and guardrail decisions for the last six hours. All of
it goes through the real services on a replayed clock. Refuses to run in production
or when a candidate is already running.
"""

from __future__ import annotations

import math
import random
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

# (tier, share of traffic, median first-chunk ms, prompt tokens, completion tokens, model)
TIERS = [
    ("L1", 0.80, 320.0, 110, 24, "gemma3-270m-q4km"),
    ("L2", 0.12, 850.0, 420, 90, "qwen2.5-coder-0.5b-instruct-q4km"),
    ("L3", 0.03, 1900.0, 600, 220, "gpt-4o-mini"),
    ("clarify", 0.05, 40.0, 0, 0, ""),
]


class Command(BaseCommand):
    help = "Seed a demo release history for the operator console (not in production)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--hours", type=int, default=6)
        parser.add_argument("--seed", type=int, default=7)

    def handle(self, *args: Any, **options: Any) -> None:
        from releases import clock
        from releases.assignment import baseline_ensure
        from releases.models import Release

        if settings.PRODUCTION:
            raise CommandError("releases_demo writes made-up metrics: never in production")
        if Release.objects.filter(status=Release.Status.RUNNING).exists():
            raise CommandError("a candidate is running already")
        operator = self._operator()

        rng = random.Random(options["seed"])
        end = timezone.now().replace(second=0, microsecond=0)
        start = end - timedelta(hours=options["hours"])
        moment = [start - timedelta(minutes=90)]
        clock.install(lambda: moment[0])
        try:
            stable = baseline_ensure()
            self._rejected_trial(rng, moment, stable, operator)
            moment[0] = start
            self._candidate_run(rng, moment, stable, operator, end)
        finally:
            clock.reset()
        self.stdout.write(f"seeded {options['hours']} h of release history; log in as operator")

    @staticmethod
    def _operator() -> Any:
        """The demo's operator account (password "operator"), in the operators' group."""
        from django.contrib.auth.models import Group, User

        from releases.permissions import OPERATORS, groups_ensure

        groups_ensure()
        operator, created = User.objects.get_or_create(
            username="operator", defaults={"is_staff": True}
        )
        if created:
            operator.set_password("operator")
            operator.save()
        operator.groups.add(Group.objects.get(name=OPERATORS))
        return operator

    def _rejected_trial(
        self, rng: random.Random, moment: list[Any], stable: Any, operator: Any
    ) -> None:
        """An earlier candidate whose L1 model was slower: the guardrail rolled it back."""
        from releases import decisions, services
        from releases.metrics import ReplyFacts, rating_record, reply_record
        from releases.models import Release

        rejected = services.release_create(
            name="fast-q8-trial",
            description="Gemma 270M Q8 for L1",
            config={"fast": {"max_tokens": 80, "temperature": 0.3}},
            user=operator,
            reason="try the Q8 quantisation",
        )
        services.release_start(release_id=rejected.pk, user=operator, reason="trial")
        services.release_weight_set(
            release_id=rejected.pk, weight=50, user=operator, reason="night traffic is low"
        )
        for _ in range(12):
            moment[0] += timedelta(minutes=10)
            self._traffic(
                rng,
                reply_record,
                rating_record,
                ReplyFacts,
                stable,
                rejected,
                50,
                slow=1.6,
                n=120,
            )
            decisions.release_tick()
            rejected.refresh_from_db()
            if rejected.status != Release.Status.RUNNING:
                break
        else:
            services.release_rollback(
                release_id=rejected.pk, user=operator, reason="demo: trial over"
            )

    def _candidate_run(
        self, rng: random.Random, moment: list[Any], stable: Any, operator: Any, end: Any
    ) -> None:
        """The candidate running now, stepped up by the schedule until ``end``."""
        from releases import decisions, services
        from releases.metrics import ReplyFacts, rating_record, reply_record

        candidate = services.release_create(
            name="templates-v2",
            description="Reply templates v2 and a lower clarify threshold",
            config={"prompt_version": "v2", "router": {"clarify_threshold": 0.4}},
            user=operator,
            reason="friendlier templates",
        )
        services.release_start(release_id=candidate.pk, user=operator, reason="ship v2")
        beats = 0
        while moment[0] < end:
            moment[0] += timedelta(minutes=5)
            beats += 1
            candidate.refresh_from_db()
            self._traffic(
                rng,
                reply_record,
                rating_record,
                ReplyFacts,
                stable,
                candidate,
                candidate.weight,
                slow=1.0,
                n=14,
            )
            if beats % 2 == 0:  # a beat every 10 minutes of replayed time
                decisions.release_tick()

    @staticmethod
    def _traffic(
        rng: random.Random,
        reply_record: Any,
        rating_record: Any,
        facts_cls: Any,
        stable: Any,
        candidate: Any,
        weight: int,
        *,
        slow: float,
        n: int,
    ) -> None:
        from releases import clock

        for _ in range(n):
            on_candidate = rng.random() * 100 < weight
            release = candidate if on_candidate else stable
            variant = "candidate" if on_candidate else "stable"
            roll, tier = rng.random(), TIERS[-1]
            for entry in TIERS:
                roll -= entry[1]
                if roll <= 0:
                    tier = entry
                    break
            name, _share, median, prompt, completion, model = tier
            factor = slow if on_candidate and name == "L1" else 1.0
            latency = median * factor * math.exp(rng.gauss(0, 0.35))
            failed = rng.random() < 0.004
            reply_record(
                facts_cls(
                    release_id=release.pk,
                    variant=variant,
                    tier=name,
                    status="error" if failed else "complete",
                    model=model,
                    first_chunk_ms=latency,
                    prompt_tokens=prompt,
                    completion_tokens=completion,
                    question="can I talk to a human?"
                    if rng.random() < 0.02
                    else "where is my order?",
                    text="x" * (completion * 4 or 120),
                    metadata={"fallback": {"reason": "timeout"}}
                    if name == "L3" and rng.random() < 0.1
                    else {},
                )
            )
            if rng.random() < 0.35:
                rating_record(
                    minute=clock.minute_floor(clock.now()),
                    release_id=release.pk,
                    variant=variant,
                    tier=name,
                    satisfied=rng.random() < 0.87,
                    previous=None,
                )
