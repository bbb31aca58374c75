"""The records an intents file is read into (``Bundle``), with the checks every
format shares (names, tiers, languages, lengths, template placeholders), and the
errors that name the line or item they came from."""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field

from knowledge.text import language_detect
from routing.models import LANGUAGES, TIER_CHOICES, Intent, Utterance

FORMATS = ("csv", "json", "rasa")
TIERS = tuple(value for value, _ in TIER_CHOICES)
JSON_FORMAT_TAG = "tierdesk-intents/1"
# The model's field lengths (a longer text would fail the INSERT, after other rows).
_TEXT_MAX = Utterance._meta.get_field("text").max_length or 500
_NAME_MAX = Intent._meta.get_field("name").max_length or 64
_SLUG_RE = re.compile(r"^[-a-zA-Z0-9_]+$")


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
        language = language_pick(language, text, default_language)
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
        language = language_pick(language, text, default_language)
        if language not in LANGUAGES:
            self.error(where, f"language {language!r} is not one of {', '.join(LANGUAGES)}")
            return
        if self.intent_touch(intent, where):
            self.templates.append(
                TemplateRecord(intent.strip(), key, language, text.strip(), where)
            )


def language_pick(language: str, text: str, default: str) -> str:
    """The row's language, else the import's default, else detected from the text."""
    language = (language or "").strip().lower()
    if language:
        return language
    if default and default != "auto":
        return default
    return language_detect(text)
