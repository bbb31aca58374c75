"""Default intents, example utterances, slot patterns and rules, and how a release's
changes to them reach a database seeded by an earlier release.

Safe to run on every deploy. Utterances are seeded per (intent, language) only when
that intent has none in that language yet, so an example an admin deleted (because
it misrouted) does not come back on the next deploy.

Intents (tier, description, enabled), rules, slot patterns and reply templates
(routing/seed_templates.py) remember the seed they came from in ``seed_hash``. On
each seed, for each shipped row:

- missing: created;
- its values are still those it was seeded with, and the shipped seed moved on:
  updated to the shipped values (a fixed regex, a reworded template);
- edited in the admin since it was seeded: kept, and reported (``SeedReport.log``);
- from before seed hashes existed (empty ``seed_hash``): equal to the shipped seed,
  it adopts the hash; equal to what an earlier release shipped (``seed_history``), it
  is updated; otherwise it is kept and reported (an admin's edit, as far as anything
  can tell), and ``manage.py router_seed --reset NAME`` takes the shipped version.

A seed row deleted in the admin is created again (disable it instead); a row a
release stops shipping is left as it is.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Generic, TypeVar

from django.db import models, transaction

from routing.models import Intent, Rule, SlotPattern, Utterance
from routing.versioning import router_version_bump

SEED_DIR = Path(__file__).resolve().parent / "seed_data"

logger = logging.getLogger(__name__)

# How many names a log line lists before "and N more" (the command lists them all).
LOG_NAMES_MAX = 20


@cache
def seed_intents_data() -> list[dict[str, Any]]:
    """The seed intents as stored in seed_data/intents.json (read once per process)."""
    data = json.loads((SEED_DIR / "intents.json").read_text(encoding="utf-8"))
    intents: list[dict[str, Any]] = data["intents"]
    return intents


@cache
def seed_rules_data() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SEED_DIR / "rules.json").read_text(encoding="utf-8"))
    return data


@cache
def seed_history() -> dict[str, frozenset[str]]:
    """label -> the hashes of every value the seed files shipped before seed hashes
    existed (seed_data/seed_history.json, written once by scripts/seed_history.py from
    the files' git history up to migration 0007). A row without a seed hash whose
    values are one of these is an older release's seed nobody edited."""
    path = SEED_DIR / "seed_history.json"
    if not path.exists():
        return {}
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return {label: frozenset(hashes) for label, hashes in data.items() if label != "_comment"}


def shipped_hashes(
    *, rules: dict[str, Any], intents: list[dict[str, Any]], templates: dict[str, Any]
) -> dict[str, str]:
    """label -> hash of what these seed files ship (scripts/seed_history.py)."""
    hashes = {f"intent:{i['name']}": seed_hash("intent", _intent_shipped(i)) for i in intents}
    for rule in rules["rules"]:
        hashes[f"rule:{rule['name']}"] = seed_hash("rule", rule_values(rule))
    for slot in rules["slot_patterns"]:
        hashes[f"slot:{slot['name']}"] = seed_hash("slot", _slot_values(slot))
    for intent, keys in templates.items():
        if intent == "_comment":
            continue
        for key, languages in keys.items():
            for language, text in languages.items():
                hashes[f"template:{intent}.{key}.{language}"] = seed_hash(
                    "template", {"text": text}
                )
    return hashes


@cache
def seed_utterances_by_intent() -> dict[tuple[str, str], list[str]]:
    """(intent, language) -> example texts: intents.json plus the training part of the
    labelled training set (routing/seed_data/train.tsv). The held-out set
    (bench/sets/router/demo/heldout.tsv) is never seeded."""
    from routing.training_data import TRAIN_FILE, labelled_load

    grouped: dict[tuple[str, str], list[str]] = {}
    for item in seed_intents_data():
        for language, texts in item["utterances"].items():
            grouped.setdefault((item["name"], language), []).extend(texts)
    for labelled in labelled_load(TRAIN_FILE):
        grouped.setdefault((labelled.intent, labelled.language), []).append(labelled.text)
    return {key: list(dict.fromkeys(texts)) for key, texts in grouped.items()}


def seed_utterances() -> list[tuple[str, str, str]]:
    """Every seed utterance as (text, language, intent)."""
    return [
        (text, language, intent)
        for (intent, language), texts in seed_utterances_by_intent().items()
        for text in texts
    ]


# --- which seed a row came from ----------------------------------------------------


def seed_hash(kind: str, values: dict[str, Any]) -> str:
    """The hash of a row's seeded values. Numbers are normalised by the callers
    (``rule_values``...) so that 0 in a JSON file and 0.0 from the database agree."""
    blob = json.dumps(
        {"kind": kind, **values}, sort_keys=True, ensure_ascii=False, separators=(",", ":")
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _intent_values(*, tier: str, description: str, enabled: bool) -> dict[str, Any]:
    return {"tier": tier, "description": description, "enabled": bool(enabled)}


def _intent_shipped(item: dict[str, Any]) -> dict[str, Any]:
    return _intent_values(tier=item["tier"], description=item["description"], enabled=True)


def _intent_current(row: Intent) -> dict[str, Any]:
    return _intent_values(tier=row.tier, description=row.description, enabled=row.enabled)


# The fields a seed rule sets (and its hash covers); "intent" by name.
RULE_FIELDS = (
    "kind",
    "pattern",
    "keywords",
    "min_density",
    "min_matches",
    "tier",
    "intent",
    "priority",
    "languages",
    "enabled",
)


def rule_values(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": item["kind"],
        "pattern": item.get("pattern", ""),
        "keywords": list(item.get("keywords", [])),
        "min_density": float(item.get("min_density", 0.0)),
        "min_matches": int(item.get("min_matches", 1)),
        "tier": item.get("tier", ""),
        "intent": item["intent"],
        "priority": int(item["priority"]),
        "languages": list(item.get("languages", [])),
        "enabled": bool(item.get("enabled", True)),
    }


def rule_current(row: Rule) -> dict[str, Any]:
    values = {name: getattr(row, name) for name in RULE_FIELDS if name != "intent"}
    return rule_values({**values, "intent": row.intent.name})


def _slot_values(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "regex": item["regex"],
        "intent": item.get("intent"),
        "enabled": bool(item.get("enabled", True)),
    }


def _slot_current(row: SlotPattern) -> dict[str, Any]:
    intent = row.intent.name if row.intent is not None else None
    return _slot_values({"regex": row.regex, "intent": intent, "enabled": row.enabled})


@dataclass
class SeedReport:
    """What one seed run did, by row label ("rule:handoff-request",
    "template:order_status.pending.en"...)."""

    created: Counter[str] = field(default_factory=Counter)
    updated: list[str] = field(default_factory=list)
    # Rows from before seed hashes that equal the shipped seed: they follow it from now on.
    adopted: list[str] = field(default_factory=list)
    # Kept: edited in the admin; the shipped seed is still the one they were seeded from.
    edited: list[str] = field(default_factory=list)
    # Kept: they differ from the shipped seed, which changed since they were seeded (or
    # they predate seed hashes): the upgrade they are missing needs ``--reset``.
    diverged: list[str] = field(default_factory=list)
    reset: list[str] = field(default_factory=list)

    def log(self) -> None:
        for level, what, labels in (
            (logging.INFO, "rows updated to the shipped seed", self.updated),
            (logging.INFO, "rows reset to the shipped seed", self.reset),
            (
                logging.INFO,
                "rows from before seed tracking equal the shipped seed and will follow it",
                self.adopted,
            ),
            (logging.INFO, "rows edited in the admin kept", self.edited),
            (
                logging.WARNING,
                "rows kept that differ from the shipped seed, which changed since they "
                "were seeded (or they predate seed tracking); `manage.py router_seed "
                "--reset NAME ...` replaces a row with the shipped version (and loses "
                "its edits)",
                self.diverged,
            ),
        ):
            if labels:
                logger.log(level, "router seed: %d %s: %s", len(labels), what, _names(labels))


def _names(labels: list[str]) -> str:
    shown = ", ".join(labels[:LOG_NAMES_MAX])
    more = len(labels) - LOG_NAMES_MAX
    return f"{shown} and {more} more" if more > 0 else shown


M = TypeVar("M", bound=models.Model)


@dataclass
class SeedPlan(Generic[M]):
    """The writes one kind of seed row needs, done in bulk (no post_save per row: the
    caller bumps the router version once)."""

    kind: str  # "rule": labels are "rule:<name>"
    fields: list[str]  # the model fields ``assign`` writes
    current: Callable[[M], dict[str, Any]]  # a row's values, in the shape of the seed's
    assign: Callable[[M, dict[str, Any]], None]
    report: SeedReport
    reset: Collection[str]  # labels to set to the shipped seed even if edited
    create: list[M] = field(default_factory=list)
    update: list[M] = field(default_factory=list)
    adopt: list[M] = field(default_factory=list)

    def row(self, name: str, row: M | None, shipped: dict[str, Any], new: M) -> None:
        """Plan one shipped row: ``row`` is the database's (None: missing), ``new`` the
        unsaved row to create in that case (its identity fields set)."""
        label, report = f"{self.kind}:{name}", self.report
        shipped_hash = seed_hash(self.kind, shipped)
        if row is None:
            self.assign(new, shipped)
            new.seed_hash = shipped_hash  # type: ignore[attr-defined]
            self.create.append(new)
            report.created[self.kind] += 1
            return
        stored: str = row.seed_hash  # type: ignore[attr-defined]
        current_hash = seed_hash(self.kind, self.current(row))
        if current_hash == shipped_hash:
            if stored != shipped_hash:
                # Same values, new or no hash: nothing the router sees changes.
                row.seed_hash = shipped_hash  # type: ignore[attr-defined]
                self.adopt.append(row)
                if not stored:
                    report.adopted.append(label)
            return
        untouched = (
            current_hash == stored
            if stored
            else current_hash in seed_history().get(label, frozenset())
        )
        if label in self.reset or untouched:
            self.assign(row, shipped)
            row.seed_hash = shipped_hash  # type: ignore[attr-defined]
            self.update.append(row)
            (report.reset if label in self.reset else report.updated).append(label)
        elif stored == shipped_hash:
            report.edited.append(label)
        else:
            report.diverged.append(label)

    def save(self, model: type[M]) -> bool:
        """Write the plan; True when the router's data changed."""
        model._default_manager.bulk_create(self.create)
        if self.update:
            model._default_manager.bulk_update(self.update, [*self.fields, "seed_hash"])
        if self.adopt:
            model._default_manager.bulk_update(self.adopt, ["seed_hash"])
        return bool(self.create or self.update)


def seed_labels() -> list[str]:
    """Every row the seed ships, by the label ``router_seed --reset`` takes."""
    from routing.templates import seed_templates

    rules = seed_rules_data()
    return [
        *(f"intent:{item['name']}" for item in seed_intents_data()),
        *(f"rule:{rule['name']}" for rule in rules["rules"]),
        *(f"slot:{slot['name']}" for slot in rules["slot_patterns"]),
        *(
            f"template:{intent}.{key}.{language}"
            for intent, keys in seed_templates().items()
            for key, languages in keys.items()
            for language in languages
        ),
    ]


def seed_labels_resolve(names: Collection[str]) -> list[str]:
    """``--reset`` names to labels: "rule:comparison", or "comparison" when only one
    kind of row has that name. Raises ValueError naming what it could not resolve."""
    labels = seed_labels()
    resolved: list[str] = []
    problems: list[str] = []
    for name in names:
        if name in labels:
            resolved.append(name)
            continue
        matches = [label for label in labels if label.split(":", 1)[1] == name]
        if len(matches) == 1:
            resolved.append(matches[0])
        elif matches:
            problems.append(f"{name!r} is ambiguous ({', '.join(matches)})")
        else:
            problems.append(f"{name!r} is not a shipped seed row")
    if problems:
        raise ValueError("; ".join(problems))
    return resolved


@transaction.atomic
def intents_seed(
    *, reset: Collection[str] = (), report: SeedReport | None = None
) -> dict[str, int]:
    """Create the missing default router data and bring untouched rows up to the shipped
    seed (module docstring); returns how many rows of each were created. ``reset``:
    labels (``seed_labels``) to set to the shipped seed even if edited. Logs what it
    kept unless the caller passes its own ``report``."""
    own_report = report is None
    report = report or SeedReport()

    intent_plan = SeedPlan(
        "intent", ["tier", "description", "enabled"], _intent_current, _intent_assign, report, reset
    )
    existing_intents = {i.name: i for i in Intent.objects.all()}
    for item in seed_intents_data():
        name = item["name"]
        intent_plan.row(name, existing_intents.get(name), _intent_shipped(item), Intent(name=name))
    changed = intent_plan.save(Intent)
    intents = {i.name: i for i in Intent.objects.all()}

    has_language = set(Utterance.objects.values_list("intent__name", "language").distinct())
    new_utterances = [
        Utterance(intent=intents[intent], language=language, text=text)
        for (intent, language), texts in seed_utterances_by_intent().items()
        if (intent, language) not in has_language
        for text in texts  # de-duplicated, order kept
    ]
    Utterance.objects.bulk_create(new_utterances)
    report.created["utterance"] += len(new_utterances)
    changed |= bool(new_utterances)

    rules_data = seed_rules_data()
    slot_plan = SeedPlan(
        "slot",
        ["regex", "intent", "enabled"],
        _slot_current,
        lambda row, values: _slot_assign(row, values, intents),
        report,
        reset,
    )
    slots_by_name: dict[str, list[SlotPattern]] = {}
    for slot in SlotPattern.objects.select_related("intent").order_by("id"):
        slots_by_name.setdefault(slot.name, []).append(slot)
    for item in rules_data["slot_patterns"]:
        shipped, name = _slot_values(item), item["name"]
        row = _slot_seed_row(slots_by_name.get(name, []), shipped)
        slot_plan.row(name, row, shipped, SlotPattern(name=name))
    changed |= slot_plan.save(SlotPattern)

    rule_plan = SeedPlan(
        "rule",
        list(RULE_FIELDS),
        rule_current,
        lambda row, values: _rule_assign(row, values, intents),
        report,
        reset,
    )
    rules = {r.name: r for r in Rule.objects.select_related("intent")}
    for item in rules_data["rules"]:
        rule_plan.row(
            item["name"], rules.get(item["name"]), rule_values(item), Rule(name=item["name"])
        )
    changed |= rule_plan.save(Rule)

    if changed:
        router_version_bump()
    if own_report:
        report.log()
    return {
        "intents": report.created["intent"],
        "utterances": report.created["utterance"],
        "slot_patterns": report.created["slot"],
        "rules": report.created["rule"],
    }


def _slot_seed_row(rows: list[SlotPattern], shipped: dict[str, Any]) -> SlotPattern | None:
    """Slot names are not unique (an admin may add a second order_id pattern): the seed's
    row is the one holding a seed hash, else one still equal to the shipped seed, else
    the oldest of that name (the seed created it first)."""
    if not rows:
        return None
    for row in rows:
        if row.seed_hash:
            return row
    shipped_hash = seed_hash("slot", shipped)
    for row in rows:
        if seed_hash("slot", _slot_current(row)) == shipped_hash:
            return row
    return rows[0]


def _intent_assign(row: Intent, values: dict[str, Any]) -> None:
    row.tier, row.description, row.enabled = (
        values["tier"],
        values["description"],
        values["enabled"],
    )


def _slot_assign(row: SlotPattern, values: dict[str, Any], intents: dict[str, Intent]) -> None:
    row.regex, row.enabled = values["regex"], values["enabled"]
    row.intent = intents[values["intent"]] if values["intent"] else None


def _rule_assign(row: Rule, values: dict[str, Any], intents: dict[str, Intent]) -> None:
    for name in RULE_FIELDS:
        if name != "intent":
            setattr(row, name, values[name])
    row.intent = intents[values["intent"]]
