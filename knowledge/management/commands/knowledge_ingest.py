"""``manage.py knowledge_ingest``: ingest documents now, in this process (no worker).

For operators (a first import, a recovery) and the benchmark. ``--seed`` first creates
the demo knowledge base's missing documents; ``--force`` rebuilds ready ones too.

    manage.py knowledge_ingest articles/*.md            # a shop's own articles: each file
    manage.py knowledge_ingest --language zh zh/*.md    # is added (or, imported before
                                                        # under its name, updated), then
                                                        # everything pending is ingested
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Ingest pending (or, with --force, all) knowledge documents synchronously."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--seed", action="store_true", help="create the demo documents first")
        parser.add_argument("--force", action="store_true", help="re-ingest ready documents too")
        parser.add_argument(
            "files", nargs="*", type=Path, help="article files (.md, .html, .txt, .pdf) to add"
        )
        parser.add_argument("--language", default="en", help="the files' language: en or zh")

    def handle(self, *args: Any, **options: Any) -> None:
        from knowledge import services
        from knowledge.models import Document
        from knowledge.seed import knowledge_seed

        if options["seed"]:
            self.stdout.write(f"seeded: {knowledge_seed()}")
        for path in options["files"]:
            try:
                document = services.document_import(
                    file_name=path.name, data=path.read_bytes(), language=options["language"]
                )
            except OSError as exc:
                raise CommandError(f"cannot read {path}: {exc.strerror}") from exc
            except ValueError as exc:
                raise CommandError(str(exc)) from exc
            self.stdout.write(f"{path.name}: document {document.pk} ({document.title})")
        qs = Document.objects.all()
        if not options["force"]:
            qs = qs.exclude(status=Document.Status.READY)
        for document_id in qs.values_list("pk", flat=True):
            try:
                outcome = services.document_ingest(document_id=document_id, force=options["force"])
            except services.IngestError as exc:
                services.document_fail(document_id=document_id, error=str(exc))
                self.stdout.write(f"document {document_id}: failed ({exc})")
                continue
            self.stdout.write(
                f"document {document_id}: {outcome.result}, {outcome.chunks} chunks, "
                f"{outcome.seconds:.2f}s"
            )
