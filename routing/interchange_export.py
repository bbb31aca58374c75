"""Writing intents, their examples and reply templates as CSV, JSON or Rasa
``nlu.yml``; the import (routing/interchange_parse.py) reads each back to the same
data."""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from typing import Any

import yaml

from routing.interchange_records import FORMATS, JSON_FORMAT_TAG
from routing.models import Intent, ReplyTemplate, Utterance


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
