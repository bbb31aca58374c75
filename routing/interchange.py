"""Bring your own intents: import and export intents, example utterances and reply
templates as CSV, JSON or Rasa ``nlu.yml`` (docs/routing.md, "Bring your own intents").

Importing is two steps, so the admin can look before anything changes:
``bundle_parse`` (routing/interchange_parse.py) reads a file into records and a list
of errors, each naming the line (CSV, YAML) or the item (JSON) it came from;
``bundle_plan`` says what applying would change; ``bundle_apply`` writes it in one
transaction, and only when there are no errors at all: a malformed file never leaves
a half-imported router. The version is bumped once at the end, so the classifier is
retrained once, by the existing ``routing.router_retrain`` Celery task. Exporting:
routing/interchange_export.py.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.db import transaction

from routing.interchange_parse import bundle_parse
from routing.interchange_records import TIERS, Bundle, ImportFailed, IntentRecord, LineError
from routing.models import Intent, ReplyTemplate, Utterance
from routing.versioning import router_version_bump


@dataclass
class IntentChange:
    name: str
    action: str  # "create" | "update" | "same"
    tier: str
    tier_before: str = ""
    add_utterances: int = 0
    remove_utterances: int = 0
    add_templates: int = 0
    change_templates: int = 0


@dataclass
class Plan:
    changes: list[IntentChange]
    disable: list[str]
    errors: list[LineError]
    skipped: int
    duplicates: int  # examples listed twice in the file (kept once)

    @property
    def totals(self) -> dict[str, int]:
        return {
            "intents_created": sum(c.action == "create" for c in self.changes),
            "intents_updated": sum(c.action == "update" for c in self.changes),
            "utterances_added": sum(c.add_utterances for c in self.changes),
            "utterances_removed": sum(c.remove_utterances for c in self.changes),
            "templates_added": sum(c.add_templates for c in self.changes),
            "templates_changed": sum(c.change_templates for c in self.changes),
            "intents_disabled": len(self.disable),
        }


def bundle_plan(
    bundle: Bundle, *, default_tier: str = "", replace: bool = False, disable_missing: bool = False
) -> Plan:
    """What ``bundle_apply`` would change, without changing it.

    ``replace``: the file's intents keep only the file's examples (others deleted).
    ``disable_missing``: intents that are not in the file stop being predicted
    (disabled, not deleted: their examples and templates stay).
    """
    existing = {i.name: i for i in Intent.objects.filter(name__in=list(bundle.intents))}
    errors = _plan_errors(bundle, existing, default_tier)
    have_utterances: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for intent, language, text in Utterance.objects.filter(
        intent__name__in=list(bundle.intents)
    ).values_list("intent__name", "language", "text"):
        have_utterances[intent].add((language, text))
    have_templates: dict[tuple[str, str, str], str] = {
        (intent, key, language): text
        for intent, key, language, text in ReplyTemplate.objects.filter(
            intent__name__in=list(bundle.intents)
        ).values_list("intent__name", "key", "language", "text")
    }
    wanted: dict[str, set[tuple[str, str]]] = defaultdict(set)
    duplicates = 0
    for u in bundle.utterances:
        if (u.language, u.text) in wanted[u.intent]:
            duplicates += 1
        wanted[u.intent].add((u.language, u.text))
    templates: dict[tuple[str, str, str], str] = {
        (t.intent, t.key, t.language): t.text for t in bundle.templates
    }
    changes = []
    for name, record in bundle.intents.items():
        change = _intent_change(record, existing.get(name), default_tier=default_tier)
        change.add_utterances = len(wanted[name] - have_utterances[name])
        if replace:
            change.remove_utterances = len(have_utterances[name] - wanted[name])
        for (intent, key, language), text in templates.items():
            if intent != name:
                continue
            old = have_templates.get((intent, key, language))
            if old is None:
                change.add_templates += 1
            elif old != text:
                change.change_templates += 1
        changes.append(change)
    disable: list[str] = []
    if disable_missing:
        disable = sorted(
            Intent.objects.filter(enabled=True, utterances__isnull=False)
            .exclude(name__in=list(bundle.intents))
            .values_list("name", flat=True)
            .distinct()
        )
    return Plan(
        changes=changes,
        disable=disable,
        errors=errors,
        skipped=bundle.skipped,
        duplicates=duplicates,
    )


def _plan_errors(bundle: Bundle, existing: dict[str, Intent], default_tier: str) -> list[LineError]:
    """The file's errors, and the options': a bad default tier, a new intent without
    a tier."""
    errors = list(bundle.errors)
    if default_tier and default_tier not in TIERS:
        errors.append(
            LineError("options", f"default tier {default_tier!r} is not one of {', '.join(TIERS)}")
        )
    for record in bundle.intents.values():
        if record.name not in existing and not record.tier and not default_tier:
            errors.append(
                LineError(
                    record.where,
                    f"new intent {record.name!r} needs a tier (a tier column, or a default tier)",
                )
            )
    return errors


def _intent_change(
    record: IntentRecord, before: Intent | None, *, default_tier: str
) -> IntentChange:
    """The intent's own change (created, updated or the same), before its examples and
    templates are counted."""
    tier = record.tier or (before.tier if before else default_tier)
    change = IntentChange(
        name=record.name,
        action="create" if before is None else "same",
        tier=tier,
        tier_before=before.tier if before else "",
    )
    if before is not None and (
        tier != before.tier
        or (record.description is not None and record.description != before.description)
        or not before.enabled
    ):
        change.action = "update"
    return change


@transaction.atomic
def bundle_apply(
    bundle: Bundle, *, default_tier: str = "", replace: bool = False, disable_missing: bool = False
) -> Plan:
    """Apply the file in one transaction; raises ``ImportFailed`` (nothing written)
    when the file or the options have any error."""
    plan = bundle_plan(
        bundle, default_tier=default_tier, replace=replace, disable_missing=disable_missing
    )
    if plan.errors:
        raise ImportFailed(plan.errors)
    # Bulk writes send no post_save: the router version is bumped once, below, so
    # the classifier is retrained once rather than once per row.
    _intents_write(bundle, plan)
    ids = dict(Intent.objects.filter(name__in=list(bundle.intents)).values_list("name", "id"))
    _utterances_write(bundle, ids, replace=replace)
    _templates_write(bundle, ids)
    if plan.disable:
        Intent.objects.filter(name__in=plan.disable).update(enabled=False)
    if any(plan.totals.values()):
        router_version_bump()
        from routing.templates import reset_template_cache

        transaction.on_commit(reset_template_cache)
    return plan


def _intents_write(bundle: Bundle, plan: Plan) -> None:
    existing = {
        i.name: i for i in Intent.objects.select_for_update().filter(name__in=list(bundle.intents))
    }
    new = [
        Intent(name=c.name, tier=c.tier, description=bundle.intents[c.name].description or "")
        for c in plan.changes
        if c.action == "create"
    ]
    Intent.objects.bulk_create(new)
    updated = []
    for change in plan.changes:
        if change.action == "update":
            intent = existing[change.name]
            intent.tier = change.tier
            intent.enabled = True
            if bundle.intents[change.name].description is not None:
                intent.description = bundle.intents[change.name].description or ""
            updated.append(intent)
    Intent.objects.bulk_update(updated, ["tier", "description", "enabled"])


def _utterances_write(bundle: Bundle, ids: dict[str, int], *, replace: bool) -> None:
    wanted: dict[int, set[tuple[str, str]]] = defaultdict(set)
    for u in bundle.utterances:
        wanted[ids[u.intent]].add((u.language, u.text))
    have: dict[int, dict[tuple[str, str], int]] = defaultdict(dict)
    for pk, intent_id, language, text in Utterance.objects.filter(
        intent_id__in=list(ids.values())
    ).values_list("pk", "intent_id", "language", "text"):
        have[intent_id][(language, text)] = pk
    seen: set[tuple[int, str, str]] = set()
    rows = []
    for u in bundle.utterances:
        key = (ids[u.intent], u.language, u.text)
        if key in seen or (u.language, u.text) in have[key[0]]:
            continue
        seen.add(key)
        rows.append(Utterance(intent_id=key[0], language=u.language, text=u.text))
    Utterance.objects.bulk_create(rows, batch_size=1000)
    if replace:
        stale = [
            pk
            for intent_id, texts in have.items()
            for k, pk in texts.items()
            if k not in wanted[intent_id]
        ]
        Utterance.objects.filter(pk__in=stale).delete()


def _templates_write(bundle: Bundle, ids: dict[str, int]) -> None:
    templates = {(ids[t.intent], t.key, t.language): t.text for t in bundle.templates}
    current = {
        (t.intent_id, t.key, t.language): t
        for t in ReplyTemplate.objects.filter(intent_id__in=list(ids.values()))
    }
    template_new: list[ReplyTemplate] = []
    template_changed: list[ReplyTemplate] = []
    for (intent_id, template_key, language), text in templates.items():
        row = current.get((intent_id, template_key, language))
        if row is None:
            template_new.append(
                ReplyTemplate(intent_id=intent_id, key=template_key, language=language, text=text)
            )
        elif row.text != text:
            row.text = text
            template_changed.append(row)
    ReplyTemplate.objects.bulk_create(template_new)
    ReplyTemplate.objects.bulk_update(template_changed, ["text"])


def intents_import(
    content: str | bytes,
    *,
    fmt: str,
    default_language: str = "auto",
    default_tier: str = "",
    replace: bool = False,
    disable_missing: bool = False,
    dry_run: bool = False,
) -> Plan:
    """Parse and apply (or only plan, ``dry_run``) one file. Raises ``ImportFailed``."""
    bundle = bundle_parse(content, fmt=fmt, default_language=default_language)
    if dry_run:
        plan = bundle_plan(
            bundle, default_tier=default_tier, replace=replace, disable_missing=disable_missing
        )
        if plan.errors:
            raise ImportFailed(plan.errors)
        return plan
    return bundle_apply(
        bundle, default_tier=default_tier, replace=replace, disable_missing=disable_missing
    )
