"""Seed the demo shop: profile, orders, catalogue, intents, templates and the knowledge base.

Idempotent: run it as often as you like; it creates what is missing, brings the router
rows nobody edited up to this release's seed and never overwrites what support admins
edited (routing/seed.py).
"""

from __future__ import annotations

from functools import partial
from typing import Any

from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = (
        "Seed the demo shop (profile, orders, catalogue, intents, templates, knowledge "
        "base). Idempotent."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--redate",
            action="store_true",
            help="Also move the demo orders' dates to today (chatbot/orders/seed.py).",
        )
        parser.add_argument(
            "--knowledge",
            nargs="+",
            metavar="KEY",
            help=(
                "Seed only these knowledge articles (their keys in knowledge/seed.py, "
                "e.g. en-boots-faq store-policy) instead of the whole demo knowledge base."
            ),
        )

    def handle(self, *args: Any, **options: Any) -> None:
        from chatbot.orders.seed import catalogue_seed, shop_seed
        from knowledge.seed import knowledge_keys, knowledge_seed
        from routing.seed import intents_seed
        from routing.seed_templates import templates_seed
        from shop.seed import profile_seed

        keys = options.get("knowledge")
        if keys:
            unknown = sorted(set(keys) - set(knowledge_keys()))
            if unknown:
                raise CommandError(
                    f"Unknown knowledge article key(s): {', '.join(unknown)}. "
                    f"Known: {', '.join(knowledge_keys())}."
                )
        for name, func in (
            ("profile", profile_seed),
            ("shop", shop_seed),
            # After the profile: the demo products take its categories.
            ("catalogue", catalogue_seed),
            ("intents", intents_seed),
            ("templates", templates_seed),
            # Documents are created here and ingested by the Celery worker.
            ("knowledge", partial(knowledge_seed, keys=keys or None)),
        ):
            counts = func()
            self.stdout.write(f"seeded {name}: {counts}")
        if options.get("redate"):
            from chatbot.orders.seed import shop_redate

            self.stdout.write(f"redated {shop_redate()} orders to today")
