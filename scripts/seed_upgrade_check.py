"""Upgrade every older release's router seed to this one's (docs/routing.md, "Upgrades").

For each commit that changed the seed files: seed the router tables from that commit's
files (as that release did), make two admin edits (rule comparison's priority, the
English greeting), clear the seed hashes (what migration 0007 leaves), run this
release's ``router_seed`` and count what it adopts, updates and keeps; then roll back.
Needs a git checkout and a migrated scratch database (it deletes and re-creates the
router's rows inside a transaction it rolls back):

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/scratch .venv/bin/python manage.py \\
        shell -c "exec(open('scripts/seed_upgrade_check.py').read())"
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from django.db import transaction

from routing import seed, seed_templates, templates
from routing.models import Intent, ReplyTemplate, Rule, SlotPattern, Utterance

FILES = ["rules.json", "intents.json", "templates.json"]
SEED_DIR, SEED_FILE = seed.SEED_DIR, templates.SEED_FILE


def _point_at(directory: Path) -> None:
    seed.SEED_DIR, templates.SEED_FILE = directory, directory / "templates.json"
    for loader in (
        seed.seed_rules_data,
        seed.seed_intents_data,
        seed.seed_utterances_by_intent,
        seed.seed_history,
        templates.seed_templates,
    ):
        loader.cache_clear()


def _files_at(commit: str) -> Path | None:
    directory = Path(tempfile.mkdtemp())
    for name in FILES:
        shown = subprocess.run(
            ["git", "show", f"{commit}:routing/seed_data/{name}"], capture_output=True, text=True
        )
        if shown.returncode:
            return None  # the file did not exist yet
        (directory / name).write_text(shown.stdout, encoding="utf-8")
    return directory


def _check(commit: str) -> str | None:
    directory = _files_at(commit)
    if directory is None:
        return None
    with transaction.atomic():
        for model in (Rule, SlotPattern, ReplyTemplate, Utterance, Intent):
            model._default_manager.all().delete()
        _point_at(directory)
        seed_templates.router_seed()
        Rule.objects.filter(name="comparison").update(priority=99)
        greeting = ReplyTemplate.objects.filter(intent__name="greeting", key="hello", language="en")
        greeting.update(text="Hi from the admin")
        for model in (Intent, Rule, SlotPattern, ReplyTemplate):
            model._default_manager.update(seed_hash="")
        _point_at(SEED_DIR)
        report = seed_templates.router_seed()
        edits_kept = (
            Rule.objects.get(name="comparison").priority == 99
            and greeting.get().text == "Hi from the admin"
        )
        transaction.set_rollback(True)
    return (
        f"{commit[:7]}: created {report.created['template'] + report.created['rule']} "
        f"rules/templates, adopted {len(report.adopted)}, updated {len(report.updated)}, "
        f"kept {len(report.diverged)} {report.diverged}, edits kept: {edits_kept}"
    )


paths = [f"routing/seed_data/{name}" for name in FILES]
commits = subprocess.run(
    ["git", "log", "--format=%H", "HEAD", "--", *paths], capture_output=True, text=True
).stdout.split()
print(f"this release ships {len(seed.seed_labels())} seed rows")
for line in filter(None, (_check(commit) for commit in commits)):
    print(line)
