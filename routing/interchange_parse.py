"""Reading an intents file (CSV, JSON or Rasa ``nlu.yml``) into a ``Bundle``: every
error is collected with the line or item it came from, never raised."""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

import yaml

from routing.interchange_records import FORMATS, Bundle, language_pick
from routing.models import Intent

# Rasa marks entities inline: "deliver to [Austin](city)" / [Austin]{"entity": "city"}.
_RASA_ENTITY_RE = re.compile(r"\[([^\]]+)\](?:\([^)]*\)|\{[^}]*\})")
_CSV_ALIASES = {"category": "intent", "label": "intent", "lang": "language", "example": "text"}


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
        _rasa_intent(bundle, entry, default_language)
    responses = top.get("responses")
    if isinstance(responses, yaml.MappingNode):
        _rasa_responses(bundle, responses, default_language)
    return bundle


def _rasa_intent(bundle: Bundle, entry: yaml.Node, default_language: str) -> None:
    """One ``- intent:`` entry of the nlu list and its examples."""
    line = entry.start_mark.line + 1
    if not isinstance(entry, yaml.MappingNode):
        bundle.error(f"line {line}", "want an entry like '- intent: name'")
        return
    fields = {key.value: value for key, value in entry.value if isinstance(key, yaml.ScalarNode)}
    if "intent" not in fields:
        bundle.skipped += 1
        return
    name_node = fields["intent"]
    name = name_node.value if isinstance(name_node, yaml.ScalarNode) else ""
    where = f"line {line}"
    metadata = _yaml_plain(fields.get("metadata"))
    if metadata is not None and not isinstance(metadata, dict):
        bundle.error(where, "metadata must be a mapping")
        return
    metadata = metadata or {}
    if not bundle.intent_touch(
        str(name),
        where,
        tier=str(metadata.get("tier") or ""),
        description=metadata.get("description"),
    ):
        return
    language = str(metadata.get("language") or "")
    examples = fields.get("examples")
    if not isinstance(examples, yaml.ScalarNode):
        bundle.error(where, f"intent {name!r} has no examples: block")
        return
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


def _rasa_responses(bundle: Bundle, responses: yaml.MappingNode, default_language: str) -> None:
    """The ``responses:`` section: ``utter_<intent>`` becomes its "default" template."""
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
            language = language_pick(
                str(meta.get("language") or ""), variant["text"], default_language
            )
            by_language.setdefault(language, variant["text"])
        for language, text in by_language.items():
            bundle.template_add(
                intent, "default", language, text, where, default_language=default_language
            )


def _yaml_plain(node: yaml.Node | None) -> Any:
    if node is None:
        return None
    return yaml.SafeLoader(io.StringIO("")).construct_object(node, deep=True)
