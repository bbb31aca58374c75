"""Seed the reply templates from routing/seed_data/templates.json: missing rows are
created, untouched ones follow the shipped text, admin edits are kept and reported
(the rules of routing/seed.py)."""

from __future__ import annotations

from collections.abc import Collection

from django.db import transaction

from .models import Intent, ReplyTemplate
from .seed import SeedPlan, SeedReport, intents_seed
from .templates import reset_template_cache, seed_templates
from .versioning import router_version_bump


@transaction.atomic
def templates_seed(
    *, reset: Collection[str] = (), report: SeedReport | None = None
) -> dict[str, int]:
    """Returns how many templates were created. ``reset`` and ``report``: as for
    ``routing.seed.intents_seed``."""
    own_report = report is None
    report = report or SeedReport()
    intents = {i.name: i for i in Intent.objects.all()}
    for intent_name in seed_templates():
        if intent_name not in intents:
            # "dialogue" holds shared texts (ask for identity, clarify...): no
            # utterances, so the classifier never predicts it.
            intents[intent_name] = Intent.objects.create(
                name=intent_name,
                tier="clarify",
                description="Shared dialogue texts",
                enabled=False,
            )
    existing = {
        (t.intent.name, t.key, t.language): t
        for t in ReplyTemplate.objects.select_related("intent")
    }
    plan: SeedPlan[ReplyTemplate] = SeedPlan(
        "template", ["text"], lambda row: {"text": row.text}, _text_assign, report, reset
    )
    for intent_name, keys in seed_templates().items():
        for key, languages in keys.items():
            for language, text in languages.items():
                row = existing.get((intent_name, key, language))
                new = ReplyTemplate(intent=intents[intent_name], key=key, language=language)
                plan.row(f"{intent_name}.{key}.{language}", row, {"text": text}, new)
    if plan.save(ReplyTemplate):
        # Other processes notice the version; this one forgets its rows at once and
        # again when the change is visible to its other connections.
        router_version_bump()
        transaction.on_commit(reset_template_cache)
    reset_template_cache()
    if own_report:
        report.log()
    return {"templates_created": report.created["template"]}


def _text_assign(row: ReplyTemplate, values: dict[str, str]) -> None:
    row.text = values["text"]


# Here, not in seed.py: the whole seed needs both halves, and seed.py importing this module
# (which imports seed.py) was an import cycle (tests/config/test_imports.py).
def router_seed(*, reset: Collection[str] = (), dry_run: bool = False) -> SeedReport:
    """The whole router seed (intents, utterances, slot patterns, rules, reply
    templates), logged; ``dry_run`` reports what it would do and writes nothing."""
    report = SeedReport()
    with transaction.atomic():
        intents_seed(reset=reset, report=report)
        templates_seed(reset=reset, report=report)
        if dry_run:
            transaction.set_rollback(True)
    if not dry_run:
        report.log()
    return report
