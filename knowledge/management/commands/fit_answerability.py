"""``manage.py fit_answerability``: fit the answerability classifier
(``knowledge.answerability``) on labelled questions against this knowledge base.

By default it fits the seed model from the demo shop's seed sets (the ``dev`` split of
bench/sets/answers/demo/questions.jsonl and its probe sets; never the ``test`` split),
which needs the demo knowledge base with the evaluation's added articles, as
``python -m bench.answerability`` builds it. ``--questions FILE`` refits from a shop's
own labelled questions (JSON lines, knowledge/answerability_fit.py) and writes the
shop's model, which L2 then uses instead of the seed one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

DEMO = Path(settings.BASE_DIR) / "bench" / "sets" / "answers" / "demo"


def demo_seed_files() -> list[tuple[Path, set[str]]]:
    """The demo seed sets and the splits of each that may be fitted on."""
    probes = sorted(DEMO.glob("probe*.jsonl"))
    return [(DEMO / "questions.jsonl", {"dev"})] + [(p, {p.stem}) for p in probes]


class Command(BaseCommand):
    help = "Fit the answerability classifier from labelled questions."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--questions", help="a shop's labelled questions (JSON lines); default: demo seed"
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
            if options["questions"]:
                path = Path(options["questions"])
                rows = labelled_load(path, splits=splits)
                source = path.name
                output = Path(options["output"] or settings.TIERDESK_KB_ANSWERABILITY_PATH)
            else:
                rows = []
                for file, allowed in demo_seed_files():
                    rows += labelled_load(file, splits=allowed)
                source = "demo seed sets (dev split and probes)"
                output = Path(options["output"] or answerability.SEED_PATH)
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
