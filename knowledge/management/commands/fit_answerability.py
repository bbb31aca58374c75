"""``manage.py fit_answerability``: fit the answerability classifier
(``knowledge.answerability``) on labelled questions against this knowledge base.

``--questions FILE`` refits from a shop's own labelled questions (JSON lines,
knowledge/answerability_fit.py) and writes the shop's model, which L2 then uses
instead of the seed one. The seed model itself is fitted from the demo shop's seed
sets by ``python -m bench.answerability --fit`` (product code reads no evaluation
set).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Fit the answerability classifier from labelled questions."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--questions", required=True, help="the shop's labelled questions (JSON lines)"
        )
        parser.add_argument(
            "--split", action="append", help="fit only rows of this split (repeatable)"
        )
        parser.add_argument("--output", help="where to write the model (default: see above)")

    def handle(self, *args: Any, **options: Any) -> None:
        from knowledge import answerability
        from knowledge.answerability_fit import (
            LabelledDataError,
            artifact_write,
            fit,
            labelled_load,
            pairs_build,
        )

        splits = set(options["split"]) if options["split"] else None
        try:
            path = Path(options["questions"])
            rows = labelled_load(path, splits=splits)
            source = path.name
            output = Path(options["output"] or settings.TIERDESK_KB_ANSWERABILITY_PATH)
            pairs = pairs_build(rows)
            payload = fit(pairs, source=source)
        except LabelledDataError as exc:
            raise CommandError(str(exc)) from exc
        artifact_write(payload, output)
        answerability.model_reset()
        meta = payload["meta"]
        self.stdout.write(
            f"fitted on {meta['questions']} questions, {meta['pairs']} pairs "
            f"{meta['per_class']}; wrote {output} ({payload['checksum'][:12]})"
        )
        for name, figures in meta["cross_validated"].items():
            self.stdout.write(
                f"  {name}: precision {figures['precision']}, recall {figures['recall']} "
                f"(cross-validated, {figures['support']} pairs)"
            )
