"""A new shop's first day: the superuser, the staff groups, and the default intents,
rules and reply templates in English and Chinese. No demo shoppers, orders or
knowledge base (that is ``seed_demo``). Idempotent: it creates what is missing, brings
the router rows nobody edited up to this release's seed and never overwrites what
support admins edited (routing/seed.py).

    manage.py setup_shop                  # asks for the superuser
    manage.py setup_shop --noinput        # the superuser from DJANGO_SUPERUSER_USERNAME,
                                          # DJANGO_SUPERUSER_EMAIL, DJANGO_SUPERUSER_PASSWORD
    manage.py setup_shop --profile shop.json  # and the shop profile from a file
                                              # (docs/shop-profile.md), replacing the row
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = "Set up a new shop: superuser, groups, default EN/ZH intents and templates."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--noinput",
            "--no-input",
            action="store_false",
            dest="interactive",
            help="take the superuser from DJANGO_SUPERUSER_* (Django's createsuperuser)",
        )
        parser.add_argument(
            "--profile",
            type=Path,
            help="a JSON file of the shop profile's fields (docs/shop-profile.md); "
            "replaces the profile row",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        from releases.permissions import groups_ensure
        from routing.seed import intents_seed
        from routing.seed_templates import templates_seed
        from shop.models import ShopProfile
        from shop.seed import profile_load
        from shop.values import ProfileError

        profile_path: Path | None = options["profile"]
        if profile_path is not None:
            # First: a bad file stops the command before anything else is written.
            try:
                profile = profile_load(profile_path.read_bytes())
            except OSError as exc:
                raise CommandError(f"cannot read {profile_path}: {exc.strerror}") from exc
            except ProfileError as error:
                raise CommandError(f"{profile_path.name}: {error}") from error
            self.stdout.write(
                f"shop profile: {profile.country}, {profile.currency_code}, order ids "
                f"{', '.join(str(s) for s in profile.order_id_specs)}"
            )
        if get_user_model().objects.filter(is_superuser=True).exists():
            self.stdout.write("superuser: one exists already")
        else:
            # Django's own command: prompts, or reads DJANGO_SUPERUSER_* with --noinput.
            call_command("createsuperuser", interactive=options["interactive"], stdout=self.stdout)
        groups_ensure()
        self.stdout.write("groups: operators, support admins")
        self.stdout.write(f"intents and rules: {intents_seed()}")
        self.stdout.write(f"reply templates: {templates_seed()}")
        if not ShopProfile.objects.exists():
            self.stderr.write(
                "WARNING: no shop profile yet, so the demo shop's order-id form, postcode "
                "format, currency and return policy apply. Set yours in the admin (Shop "
                "profile) or with setup_shop --profile FILE (docs/shop-profile.md)."
            )
        self.stdout.write(
            "Next: set the order system (TIERDESK_ORDER_BACKEND=http, docs/order-api.md), "
            "bring your catalogue in (manage.py import_catalogue FILE or catalogue_sync, "
            "docs/catalogue.md), add your knowledge base (manage.py knowledge_ingest FILE... "
            "or the admin), and put the staff in their groups."
        )
