"""Import the catalogue from a CSV or JSON file (docs/catalogue.md).

    manage.py import_catalogue products.csv
    manage.py import_catalogue products.json --prune   # also remove what the file omits

All or nothing: with any error, nothing changes and every error is listed with its
line (or JSON path) and field; the command then exits with status 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = "Import products and variants from a CSV or JSON file (docs/catalogue.md)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path, help="a .csv or .json file")
        parser.add_argument(
            "--prune",
            action="store_true",
            help="also remove the products and variants the file does not list",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        from shop.catalogue_import import catalogue_import_file

        path: Path = options["file"]
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from exc
        result = catalogue_import_file(data, filename=path.name, prune=options["prune"])
        if not result.ok:
            for error in result.errors:
                self.stderr.write(f"{path.name}: {error}")
            raise CommandError(f"{len(result.errors)} error(s): nothing was imported")
        self.stdout.write(f"imported {path.name}: {result.counts()}")
