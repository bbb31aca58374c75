"""Export intents, example utterances and reply templates as CSV, JSON or Rasa nlu.yml.

manage.py intents_export --format rasa -o nlu.yml
manage.py intents_export --format csv order_status cancel_order   # only these
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from routing.interchange_export import intents_export
from routing.interchange_records import FORMATS


class Command(BaseCommand):
    help = "Export intents, utterances and reply templates (CSV, JSON, Rasa nlu.yml)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("names", nargs="*", help="only these intents (default: all)")
        parser.add_argument("--format", choices=FORMATS, default="json")
        parser.add_argument("-o", "--output", type=Path, help="default: standard output")

    def handle(self, *args: Any, **options: Any) -> None:
        text = intents_export(fmt=options["format"], names=options["names"] or None)
        if options["output"]:
            options["output"].write_text(text, encoding="utf-8")
            self.stdout.write(f"wrote {options['output']}")
        else:
            self.stdout.write(text, ending="")
