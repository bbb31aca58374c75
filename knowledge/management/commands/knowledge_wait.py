"""``manage.py knowledge_wait``: wait until the worker has ingested every document.

``make run`` calls it before it says the product is ready: on a fresh install the
worker is still ingesting the demo knowledge base then, and a shopper's first question
would be answered from part of it (a gift-card question got the refunds passage
because the gift-card article wasn't in yet). It prints the progress as it changes.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Wait (up to --timeout seconds) until no knowledge document is pending or ingesting."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--timeout", type=float, default=900.0)
        parser.add_argument("--interval", type=float, default=1.0)

    def handle(self, *args: Any, **options: Any) -> None:
        from knowledge.services import ingestion_progress

        deadline = time.monotonic() + options["timeout"]
        last = None
        while True:
            progress = ingestion_progress()
            if progress != last:
                failed = f", {progress.failed} failed" if progress.failed else ""
                self.stdout.write(
                    f"  knowledge base: {progress.ready}/{progress.total} documents ready{failed}"
                )
                last = progress
            if not progress.waiting:
                return
            if time.monotonic() >= deadline:
                # Not an error: the product works meanwhile, from the documents that are in.
                self.stdout.write(
                    f"  knowledge base: still ingesting {progress.waiting} documents after "
                    f"{options['timeout']:.0f}s; answers use the ones that are ready"
                )
                return
            time.sleep(options["interval"])
