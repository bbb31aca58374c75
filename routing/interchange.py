"""Bring your own intents: import and export intents, example utterances and reply
templates as CSV, JSON or Rasa ``nlu.yml`` (docs/routing.md, "Bring your own intents").

Importing is two steps, so the admin can look before anything changes:
``bundle_parse`` reads a file into records and a list of errors, each naming the line
(CSV, YAML) or the item (JSON) it came from; ``bundle_plan`` says what applying would
change; ``bundle_apply`` writes it in one transaction, and only when there are no
errors at all: a malformed file never leaves a half-imported router. The version is
bumped once at the end, so the classifier is retrained once, by the existing
``routing.router_retrain`` Celery task.
"""

from __future__ import annotations

import csv
import io
import json
import re
import string
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import yaml
from django.db import transaction

from knowledge.text import language_detect
from routing.models import LANGUAGES, TIER_CHOICES, Intent, ReplyTemplate, Utterance
from routing.versioning import router_version_bump

FORMATS = ("csv", "json", "rasa")
TIERS = tuple(value for value, _ in TIER_CHOICES)
JSON_FORMAT_TAG = "tierdesk-intents/1"
# The model's field lengths (a longer text would fail the INSERT, after other rows).
_TEXT_MAX = Utterance._meta.get_field("text").max_length or 500
_NAME_MAX = Intent._meta.get_field("name").max_length or 64
_SLUG_RE = re.compile(r"^[-a-zA-Z0-9_]+$")
# Rasa marks entities inline: "deliver to [Austin](city)" / [Austin]{"entity": "city"}.
_RASA_ENTITY_RE = re.compile(r"\[([^\]]+)\](?:\([^)]*\)|\{[^}]*\})")
_CSV_ALIASES = {"category": "intent", "label": "intent", "lang": "language", "example": "text"}


class ImportFailed(ValueError):
    """The file has errors; nothing was applied."""

    def __init__(self, errors: list[LineError]) -> None:
        self.errors = errors
        super().__init__("; ".join(str(e) for e in errors[:10]))


@dataclass(frozen=True)
class LineError:
    where: str  # "line 12" or "intents[3].utterances.en[5]"
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


@dataclass
class IntentRecord:
    name: str
    tier: str = ""  # "" = keep the existing tier / use the default for a new intent
    description: str | None = None
    where: str = ""


@dataclass(frozen=True)
class UtteranceRecord:
    intent: str
    language: str
    text: str
    where: str


@dataclass(frozen=True)
class TemplateRecord:
    intent: str
    key: str
    language: str
    text: str
    where: str


@dataclass
class Bundle:
    intents: dict[str, IntentRecord] = field(default_factory=dict)
    utterances: list[UtteranceRecord] = field(default_factory=list)
    templates: list[TemplateRecord] = field(default_factory=list)
    errors: list[LineError] = field(default_factory=list)
    skipped: int = 0  # entries the format has but the router doesn't (Rasa regex, synonyms)

    def error(self, where: str, message: str) -> None:
        self.errors.append(LineError(where, message))

    def intent_touch(
        self, name: str, where: str, *, tier: str = "", description: str | None = None
    ) -> bool:
        """Record (or complete) an intent; False, with an error, when it is invalid."""
        name = name.strip()
        if not name or len(name) > _NAME_MAX or not _SLUG_RE.match(name):
            self.error(
                where,
                f"intent name {name!r} must be 1-{_NAME_MAX} letters, digits, '-' or '_'",
            )
            return False
        tier = tier.strip()
        if tier and tier not in TIERS:
            self.error(where, f"tier {tier!r} is not one of {', '.join(TIERS)}")
            return False
        record = self.intents.setdefault(name, IntentRecord(name=name, where=where))
        if tier:
            if record.tier and record.tier != tier:
                self.error(where, f"intent {name!r} has tier {record.tier} earlier, {tier} here")
                return False
            record.tier = tier
        if description is not None and description.strip():
            record.description = description.strip()
        return True

    def utterance_add(
        self, intent: str, language: str, text: str, where: str, *, default_language: str
    ) -> None:
        text = " ".join(text.split())
        if not text:
            self.error(where, "empty example text")
            return
        if len(text) > _TEXT_MAX:
            self.error(where, f"example is {len(text)} characters, at most {_TEXT_MAX}")
            return
        language = _language_pick(language, text, default_language)
        if language not in LANGUAGES:
            self.error(where, f"language {language!r} is not one of {', '.join(LANGUAGES)}")
            return
        if self.intent_touch(intent, where):
            self.utterances.append(UtteranceRecord(intent.strip(), language, text, where))

    def template_add(
        self, intent: str, key: str, language: str, text: str, where: str, *, default_language: str
    ) -> None:
        key = (key or "default").strip()
        if not _SLUG_RE.match(key) or len(key) > 64:
            self.error(where, f"template key {key!r} must be letters, digits, '-' or '_'")
            return
        if not text.strip():
            self.error(where, "empty template text")
            return
        try:
            list(string.Formatter().parse(text))
        except ValueError as exc:
            self.error(where, f"bad placeholder syntax in the template: {exc}")
            return
        language = _language_pick(language, text, default_language)
        if language not in LANGUAGES:
            self.error(where, f"language {language!r} is not one of {', '.join(LANGUAGES)}")
            return
        if self.intent_touch(intent, where):
            self.templates.append(
                TemplateRecord(intent.strip(), key, language, text.strip(), where)
            )


def _language_pick(language: str, text: str, default: str) -> str:
    """The row's language, else the import's default, else detected from the text."""
    language = (language or "").strip().lower()
    if language:
        return language
    if default and default != "auto":
        return default
    return language_detect(text)


# --- parsing -----------------------------------------------------------------------------


def format_guess(filename: str) -> str:
    lower = filename.lower()
    if lower.endswith((".yml", ".yaml")):
        return "rasa"
    if lower.endswith(".json"):
        return "json"
    return "csv"


def bundle_parse(content: str | bytes, *, fmt: str, default_language: str = "auto") -> Bundle:
    """Read a file in ``fmt`` (csv, json, rasa). Errors are collected, never raised:
    the caller shows all of them at once."""
    if isinstance(content, bytes):
        try:
            content = content.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            bundle = Bundle()
            bundle.error("file", f"not UTF-8 text ({exc})")
            return bundle
    content = content.removeprefix("\ufeff")
    if fmt == "csv":
        return _csv_parse(content, default_language)
    if fmt == "json":
        return _json_parse(content, default_language)
    if fmt == "rasa":
        return _rasa_parse(content, default_language)
    raise ValueError(f"unknown format {fmt!r}: one of {', '.join(FORMATS)}")


def _csv_parse(content: str, default_language: str) -> Bundle:
    """Columns (header row, any order): ``intent`` (or ``category``, ``label``) and
    ``text`` are required; ``language``, ``tier``, ``description``, ``kind``
    (utterance, the default; template; intent) and ``key`` (template key) are optional.
    BANKING77's ``text,category`` files load as they are."""
    bundle = Bundle()
    reader = csv.reader(io.StringIO(content))
    try:
        header = next(reader)
    except StopIteration:
        bundle.error("line 1", "empty file: want a header row with intent and text columns")
        return bundle
    except csv.Error as exc:
        bundle.error("line 1", f"not CSV: {exc}")
        return bundle
    columns = [_CSV_ALIASES.get(c.strip().lower(), c.strip().lower()) for c in header]
    missing = {"intent", "text"} - set(columns)
    if missing:
        bundle.error(
            "line 1", f"header lacks the column(s) {', '.join(sorted(missing))}: got {header}"
        )
        return bundle
    try:
        for row in reader:
            where = f"line {reader.line_num}"
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(columns):
                bundle.error(where, f"{len(row)} fields, the header has {len(columns)}")
                continue
            cells = dict(zip(columns, row, strict=True))
            kind = (cells.get("kind") or "utterance").strip().lower()
            intent = cells["intent"]
            if kind == "intent":
                bundle.intent_touch(
                    intent, where, tier=cells.get("tier", ""), description=cells.get("description")
                )
                continue
            if kind not in ("utterance", "template"):
                bundle.error(where, f"kind {kind!r} is not utterance, template or intent")
                continue
            if not bundle.intent_touch(
                intent, where, tier=cells.get("tier", ""), description=cells.get("description")
            ):
                continue
            if kind == "template":
                bundle.template_add(
                    intent,
                    cells.get("key", ""),
                    cells.get("language", ""),
                    cells["text"],
                    where,
                    default_language=default_language,
                )
            else:
                bundle.utterance_add(
                    intent,
                    cells.get("language", ""),
                    cells["text"],
                    where,
                    default_language=default_language,
                )
    except csv.Error as exc:
        bundle.error(f"line {reader.line_num}", f"not CSV: {exc}")
    return bundle


def _json_parse(content: str, default_language: str) -> Bundle:
    """``{"intents": [{"name", "tier", "description", "utterances": {"en": [...]},
    "templates": {"default": {"en": "..."}}}]}`` (the shape of seed_data/intents.json)."""
    bundle = Bundle()
    try:
        data = json.loads(content)
    except json.JSONDecodeError as exc:
        bundle.error(f"line {exc.lineno}", f"not JSON: {exc.msg}")
        return bundle
    items = data.get("intents") if isinstance(data, dict) else None
    if not isinstance(items, list):
        bundle.error("file", 'want an object with an "intents" list')
        return bundle
    for i, item in enumerate(items):
        where = f"intents[{i}]"
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            bundle.error(where, 'want an object with a "name"')
            continue
        name = item["name"]
        where = f"intents[{i}] ({name})"
        tier = item.get("tier") or ""
        description = item.get("description")
        if not isinstance(tier, str) or (
            description is not None and not isinstance(description, str)
        ):
            bundle.error(where, "tier and description must be strings")
            continue
        if not bundle.intent_touch(name, where, tier=tier, description=description):
            continue
        utterances = item.get("utterances") or {}
        if isinstance(utterances, list):  # a plain list: the import's language
            utterances = {"": utterances}
        if not isinstance(utterances, dict):
            bundle.error(f"{where}.utterances", "want {language: [texts]} or a list of texts")
            continue
        for language, texts in utterances.items():
            if not isinstance(texts, list):
                bundle.error(f"{where}.utterances.{language}", "want a list of texts")
                continue
            for j, text in enumerate(texts):
                spot = f"{where}.utterances.{language}[{j}]"
                if not isinstance(text, str):
                    bundle.error(spot, "want a string")
                    continue
                bundle.utterance_add(name, language, text, spot, default_language=default_language)
        templates = item.get("templates") or {}
        if not isinstance(templates, dict):
            bundle.error(f"{where}.templates", "want {key: {language: text}}")
            continue
        for key, languages in templates.items():
            if not isinstance(languages, dict):
                bundle.error(f"{where}.templates.{key}", "want {language: text}")
                continue
            for language, text in languages.items():
                spot = f"{where}.templates.{key}.{language}"
                if not isinstance(text, str):
                    bundle.error(spot, "want a string")
                    continue
                bundle.template_add(
                    name, key, language, text, spot, default_language=default_language
                )
    return bundle


def _rasa_parse(content: str, default_language: str) -> Bundle:
    """Rasa ``nlu.yml`` (``nlu: - intent: x / examples: |``), with an optional
    ``responses:`` section (``utter_<intent>: - text: ...`` becomes the intent's
    "default" template). Tier and description come from the intent's ``metadata``;
    inline entity marks are dropped ("to [Austin](city)" -> "to Austin"); regex,
    synonym and lookup entries are counted as skipped."""
    bundle = Bundle()
    try:
        root = yaml.compose(content, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "file"
        bundle.error(where, f"not YAML: {getattr(exc, 'problem', None) or exc}")
        return bundle
    if not isinstance(root, yaml.MappingNode):
        bundle.error("line 1", "want a mapping with an nlu: list")
        return bundle
    top = {key.value: value for key, value in root.value if isinstance(key, yaml.ScalarNode)}
    nlu = top.get("nlu")
    if not isinstance(nlu, yaml.SequenceNode):
        bundle.error("line 1", "want an nlu: list of intents")
        return bundle
    for entry in nlu.value:
        line = entry.start_mark.line + 1
        if not isinstance(entry, yaml.MappingNode):
            bundle.error(f"line {line}", "want an entry like '- intent: name'")
            continue
        fields = {
            key.value: value for key, value in entry.value if isinstance(key, yaml.ScalarNode)
        }
        if "intent" not in fields:
            bundle.skipped += 1
            continue
        name_node = fields["intent"]
        name = name_node.value if isinstance(name_node, yaml.ScalarNode) else ""
        where = f"line {line}"
        metadata = _yaml_plain(fields.get("metadata"))
        if metadata is not None and not isinstance(metadata, dict):
            bundle.error(where, "metadata must be a mapping")
            continue
        metadata = metadata or {}
        if not bundle.intent_touch(
            str(name),
            where,
            tier=str(metadata.get("tier") or ""),
            description=metadata.get("description"),
        ):
            continue
        language = str(metadata.get("language") or "")
        examples = fields.get("examples")
        if not isinstance(examples, yaml.ScalarNode):
            bundle.error(where, f"intent {name!r} has no examples: block")
            continue
        # A block scalar ("|") starts on the line after its indicator.
        first = examples.start_mark.line + (2 if examples.style in ("|", ">") else 1)
        for offset, raw in enumerate(examples.value.split("\n")):
            if not raw.strip():
                continue
            spot = f"line {first + offset}"
            stripped = raw.strip()
            if not stripped.startswith("- "):
                bundle.error(spot, f"an example starts with '- ': {stripped[:60]!r}")
                continue
            text = _RASA_ENTITY_RE.sub(r"\1", stripped[2:])
            bundle.utterance_add(str(name), language, text, spot, default_language=default_language)
    responses = top.get("responses")
    if isinstance(responses, yaml.MappingNode):
        for key, value in responses.value:
            where = f"line {key.start_mark.line + 1}"
            intent = str(key.value).removeprefix("utter_")
            plain = _yaml_plain(value)
            variants = (
                [v for v in plain if isinstance(v, dict) and isinstance(v.get("text"), str)]
                if isinstance(plain, list)
                else []
            )
            if not variants:
                bundle.error(where, f"response {key.value!r}: want a list of '- text: ...'")
                continue
            if intent not in bundle.intents and not Intent.objects.filter(name=intent).exists():
                bundle.skipped += 1  # a response of no intent (utter_greet with no greet)
                continue
            # One template per language: the first variation of each (the router's
            # templates have no variations).
            by_language: dict[str, str] = {}
            for variant in variants:
                meta = variant.get("metadata")
                meta = meta if isinstance(meta, dict) else {}
                language = _language_pick(
                    str(meta.get("language") or ""), variant["text"], default_language
                )
                by_language.setdefault(language, variant["text"])
            for language, text in by_language.items():
                bundle.template_add(
                    intent, "default", language, text, where, default_language=default_language
                )
    return bundle


def _yaml_plain(node: yaml.Node | None) -> Any:
    if node is None:
        return None
    return yaml.SafeLoader(io.StringIO("")).construct_object(node, deep=True)


# --- planning and applying ------------------------------------------------------------------


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
    errors = list(bundle.errors)
    existing = {i.name: i for i in Intent.objects.filter(name__in=list(bundle.intents))}
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
        before = existing.get(name)
        tier = record.tier or (before.tier if before else default_tier)
        change = IntentChange(
            name=name,
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
    ids = dict(Intent.objects.filter(name__in=list(bundle.intents)).values_list("name", "id"))
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
    if plan.disable:
        Intent.objects.filter(name__in=plan.disable).update(enabled=False)
    if any(plan.totals.values()):
        router_version_bump()
        from routing.templates import reset_template_cache

        transaction.on_commit(reset_template_cache)
    return plan


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


# --- exporting ---------------------------------------------------------------------------


def _export_data(*, names: list[str] | None = None) -> list[dict[str, Any]]:
    intents = Intent.objects.order_by("name")
    if names:
        intents = intents.filter(name__in=names)
    utterances: dict[int, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for intent_id, language, text in Utterance.objects.order_by(
        "intent_id", "language", "id"
    ).values_list("intent_id", "language", "text"):
        utterances[intent_id][language].append(text)
    templates: dict[int, dict[str, dict[str, str]]] = defaultdict(lambda: defaultdict(dict))
    for intent_id, key, language, text in ReplyTemplate.objects.order_by(
        "intent_id", "key", "language"
    ).values_list("intent_id", "key", "language", "text"):
        templates[intent_id][key][language] = text
    return [
        {
            "name": intent.name,
            "tier": intent.tier,
            "description": intent.description,
            "enabled": intent.enabled,
            "utterances": {k: v for k, v in utterances[intent.pk].items()},
            "templates": {k: dict(v) for k, v in templates[intent.pk].items()},
        }
        for intent in intents
    ]


def intents_export(*, fmt: str, names: list[str] | None = None) -> str:
    """Every intent (or ``names``) with its examples and templates, in ``fmt``; the
    import reads each format back to the same data."""
    data = _export_data(names=names)
    if fmt == "json":
        return (
            json.dumps({"format": JSON_FORMAT_TAG, "intents": data}, ensure_ascii=False, indent=2)
            + "\n"
        )
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["kind", "intent", "tier", "language", "key", "text", "description"])
        for item in data:
            writer.writerow(["intent", item["name"], item["tier"], "", "", "", item["description"]])
            for language, texts in item["utterances"].items():
                for text in texts:
                    writer.writerow(["utterance", item["name"], "", language, "", text, ""])
            for key, languages in item["templates"].items():
                for language, text in languages.items():
                    writer.writerow(["template", item["name"], "", language, key, text, ""])
        return out.getvalue()
    if fmt == "rasa":
        nlu = []
        responses: dict[str, list[dict[str, Any]]] = {}
        for item in data:
            texts = [t for ts in item["utterances"].values() for t in ts]
            entry: dict[str, Any] = {
                "intent": item["name"],
                "metadata": {"tier": item["tier"], "description": item["description"]},
            }
            if texts:
                entry["examples"] = "".join(f"- {t}\n" for t in texts)
                nlu.append(entry)
            default = item["templates"].get("default", {})
            if default:
                responses[f"utter_{item['name']}"] = [
                    {"text": text, "metadata": {"language": language}}
                    for language, text in default.items()
                ]
        document: dict[str, Any] = {"version": "3.1", "nlu": nlu}
        if responses:
            document["responses"] = responses
        return yaml.dump(
            document, Dumper=_LiteralDumper, allow_unicode=True, sort_keys=False, width=10_000
        )
    raise ValueError(f"unknown format {fmt!r}: one of {', '.join(FORMATS)}")


class _LiteralDumper(yaml.SafeDumper):
    """Multi-line strings (Rasa's examples) as "|" blocks, like Rasa writes them."""


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_LiteralDumper.add_representer(str, _str_representer)
