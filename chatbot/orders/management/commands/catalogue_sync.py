"""Pull the shop's catalogue from its HTTP API now (chatbot/orders/catalogue_sync.py).

    manage.py catalogue_sync

Exits with status 1, changing nothing, when the API fails or a product is invalid
(each error listed with its JSON path and field).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Sync the catalogue from the shop's HTTP API (docs/catalogue.md)."

    def handle(self, *args: Any, **options: Any) -> None:
        from chatbot.orders.catalogue_sync import CatalogueSyncError, catalogue_sync

        try:
            result = catalogue_sync()
        except CatalogueSyncError as exc:
            raise CommandError(str(exc)) from exc
        if not result.ok:
            for error in result.errors:
                self.stderr.write(f"GET products: {error}")
            raise CommandError(f"{len(result.errors)} error(s): nothing was changed")
        self.stdout.write(f"synced the catalogue: {result.counts()}")
