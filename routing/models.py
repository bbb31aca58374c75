"""The router's data: intents, their example utterances and reply templates, slot
patterns and rules. All of it is edited by support admins, so every change bumps
``RouterVersion`` and each process retrains/recompiles on its next check.
"""

from __future__ import annotations

import re
import string
import uuid
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from routing.types import CLARIFY, L1, L2, L3

TIER_CHOICES = [
    (L1, "L1 fast (templated)"),
    (L2, "L2 knowledge (RAG)"),
    (L3, "L3 large model"),
    (CLARIFY, "Ask a clarifying question"),
]
LANGUAGE_CHOICES = [("en", "English"), ("zh", "Chinese")]
LANGUAGES = ("en", "zh")


class Intent(models.Model):
    name = models.SlugField(max_length=64, unique=True)
    tier = models.CharField(max_length=16, choices=TIER_CHOICES)
    description = models.TextField(blank=True)
    # Disabling an intent removes it from the classifier and disables its rules,
    # without losing its utterances and templates.
    enabled = models.BooleanField(default=True)
    updated_at = models.DateTimeField(auto_now=True)
    # See Rule.seed_hash.
    seed_hash = models.CharField(max_length=64, blank=True, default="", editable=False)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.tier})"


class Utterance(models.Model):
    intent = models.ForeignKey(Intent, on_delete=models.CASCADE, related_name="utterances")
    language = models.CharField(max_length=8, choices=LANGUAGE_CHOICES)
    text = models.CharField(max_length=500)

    class Meta:
        ordering = ["intent_id", "language", "id"]
        constraints = [
            # A duplicate would only re-weight the classifier silently.
            models.UniqueConstraint(
                fields=["intent", "language", "text"], name="routing_utterance_unique_text"
            )
        ]

    def __str__(self) -> str:
        return f"[{self.language}] {self.text}"


class ReplyTemplate(models.Model):
    intent = models.ForeignKey(Intent, on_delete=models.CASCADE, related_name="templates")
    key = models.SlugField(max_length=64, help_text='e.g. "default", "pending", "confirm".')
    language = models.CharField(max_length=8, choices=LANGUAGE_CHOICES)
    text = models.TextField(help_text="str.format placeholders, e.g. {order_id} {status}.")
    # See Rule.seed_hash.
    seed_hash = models.CharField(max_length=64, blank=True, default="", editable=False)

    class Meta:
        ordering = ["intent_id", "key", "language"]
        constraints = [
            models.UniqueConstraint(
                fields=["intent", "key", "language"], name="routing_replytemplate_unique_key"
            )
        ]

    def __str__(self) -> str:
        return f"{self.intent_id}:{self.key}:{self.language}"

    def clean(self) -> None:
        # Catch "{order_id" typos in the admin instead of at reply time.
        try:
            list(string.Formatter().parse(self.text))
        except ValueError as exc:
            raise ValidationError({"text": f"bad placeholder syntax: {exc}"}) from exc


class SlotPattern(models.Model):
    name = models.SlugField(
        max_length=64,
        help_text='Slot name, e.g. "order_id", "email", "zip". order_id, email and zip values '
        "are normalised in code (order ids become #W1234567).",
    )
    regex = models.TextField(
        help_text="Python regex, matched case-insensitively. A named group (?P<value>...) "
        "picks the value; otherwise the whole match is used."
    )
    intent = models.ForeignKey(
        Intent,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="slot_patterns",
        help_text="Only extract for this intent; empty means every message.",
    )
    enabled = models.BooleanField(default=True)
    # See Rule.seed_hash.
    seed_hash = models.CharField(max_length=64, blank=True, default="", editable=False)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        _regex_validate(self.regex, field="regex")


class Rule(models.Model):
    KIND_REGEX = "regex"
    KIND_KEYWORDS = "keywords"
    KIND_CHOICES = [(KIND_REGEX, "Regular expression"), (KIND_KEYWORDS, "Keyword density")]

    name = models.SlugField(max_length=64, unique=True)
    kind = models.CharField(max_length=16, choices=KIND_CHOICES)
    pattern = models.TextField(
        blank=True,
        help_text="regex rules: Python regex on the normalised (lower-case, NFKC) message.",
    )
    keywords = models.JSONField(
        default=list,
        blank=True,
        help_text='keyword rules: JSON list, e.g. ["unacceptable", "投诉"].',
    )
    min_density = models.FloatField(
        default=0.0,
        help_text="keyword rules: fires when keywords cover at least this share of the "
        "message's tokens (a token is a word or one Chinese character).",
    )
    min_matches = models.PositiveSmallIntegerField(
        default=1,
        help_text="regex rules: fires when the pattern matches at least this many times "
        "(2 with a question-clause pattern means several questions in one message).",
    )
    tier = models.CharField(
        max_length=16, choices=TIER_CHOICES, blank=True, help_text="Empty: the intent's tier."
    )
    intent = models.ForeignKey(Intent, on_delete=models.CASCADE, related_name="rules")
    priority = models.IntegerField(default=100, help_text="Lower runs first; first match wins.")
    languages = models.JSONField(
        default=list, blank=True, help_text='e.g. ["en"]; empty means every language.'
    )
    enabled = models.BooleanField(default=True)
    # The seed this row came from (routing/seed.py): a hash of the values the seed
    # wrote, so an upgrade can tell an untouched row (updated to the new seed) from one
    # a support admin edited (kept). Empty: not seeded, or seeded before this existed.
    seed_hash = models.CharField(max_length=64, blank=True, default="", editable=False)

    class Meta:
        ordering = ["priority", "name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        errors: dict[str, Any] = {}
        if self.kind == self.KIND_REGEX:
            if not self.pattern:
                errors["pattern"] = "a regex rule needs a pattern"
            else:
                try:
                    _regex_validate(self.pattern, field="pattern")
                except ValidationError as exc:
                    errors.update(exc.message_dict)
        elif self.kind == self.KIND_KEYWORDS:
            if (
                not isinstance(self.keywords, list)
                or not self.keywords
                or not all(isinstance(k, str) and k.strip() for k in self.keywords)
            ):
                errors["keywords"] = "a keyword rule needs a non-empty JSON list of strings"
            if not 0.0 < self.min_density <= 1.0:
                errors["min_density"] = "between 0 (exclusive) and 1"
        if not isinstance(self.languages, list) or not set(self.languages) <= set(LANGUAGES):
            errors["languages"] = f"a JSON list drawn from {list(LANGUAGES)}"
        if errors:
            raise ValidationError(errors)


class RouterVersion(models.Model):
    """One row. Processes poll it (cheaply, at most every few seconds) to notice edits.

    ``stamp`` changes with every bump, so a rolled-back transaction that reused a
    version number can never be mistaken for the data a process already trained on.
    """

    version = models.PositiveBigIntegerField(default=0)
    stamp = models.UUIDField(default=uuid.uuid4)
    changed_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"router v{self.version}"


class ClassifierModel(models.Model):
    """A trained intent classifier, stored so that every process loads it instead of
    training its own copy.

    The ``routing.router_retrain`` Celery task writes it after an admin edit; processes
    notice the ``RouterVersion`` bump and load the row whose ``data_hash`` matches the
    current training data. Keyed by that hash, not by the version: an edit to a rule
    bumps the version but trains nothing. Not a versioned model itself (saving one must
    not bump the version it was trained for).
    """

    data_hash = models.CharField(max_length=64, unique=True)
    router_version = models.PositiveBigIntegerField(
        help_text="The latest router version this model was confirmed for."
    )
    sample_count = models.PositiveIntegerField()
    intent_count = models.PositiveSmallIntegerField()
    train_seconds = models.FloatField(help_text="Wall time of the training run.")
    trained_at = models.DateTimeField()
    trained_by = models.CharField(
        max_length=128, blank=True, help_text='"celery:<hostname>" or "process:<pid>".'
    )
    # A model pickled by one scikit-learn must not be loaded by another.
    sklearn_version = models.CharField(max_length=32)
    size_bytes = models.PositiveIntegerField()
    # zlib-compressed pickle of routing.classifier.TrainedClassifier. Only Tierdesk's
    # own code writes this column; never load a blob from elsewhere.
    blob = models.BinaryField()

    class Meta:
        ordering = ["-router_version", "-id"]

    def __str__(self) -> str:
        return f"classifier for router v{self.router_version} ({self.sample_count} examples)"


class RetrainRun(models.Model):
    """One retraining of the classifier, for one router version: queued when an edit
    commits, then updated by the ``routing.router_retrain`` task as it goes, so the
    admin can show progress (a row in the database, because the worker is another
    process and may not share a cache with the web process). Not versioned."""

    QUEUED, TRAINING, DONE, UNCHANGED, SUPERSEDED, FAILED = (
        "queued",
        "training",
        "done",
        "unchanged",
        "superseded",
        "failed",
    )
    STATUS_CHOICES = [(s, s) for s in (QUEUED, TRAINING, DONE, UNCHANGED, SUPERSEDED, FAILED)]
    FINISHED = (DONE, UNCHANGED, SUPERSEDED, FAILED)

    router_version = models.PositiveBigIntegerField(unique=True)
    status = models.CharField(max_length=16, choices=STATUS_CHOICES, default=QUEUED)
    stage = models.CharField(max_length=200, blank=True)
    progress = models.FloatField(default=0.0, help_text="0 to 1")
    queued_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    result = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-router_version"]

    def __str__(self) -> str:
        return f"retrain v{self.router_version}: {self.status}"


class OutOfScopePoint(models.Model):
    """The point on the out-of-scope trade-off curve a support admin chose (Routing ->
    Intents -> Retraining, a click on the curve): the router asks the shopper to
    rephrase when the classifier's top probability is under ``threshold``. The latest
    row applies (the others are the history of choices); with none, the
    TIERDESK_ROUTER_CLARIFY_THRESHOLD setting does. Saving one bumps RouterVersion,
    so every process applies it within seconds (no retraining: the data are the same)."""

    threshold = models.FloatField(help_text="0 to 1: the clarify threshold on the top probability")
    # What the curve promised at this point when it was chosen (held-out examples and
    # off-topic text of the model then in use), for the record.
    in_scope_accuracy = models.FloatField(null=True, blank=True)
    oos_recall = models.FloatField(null=True, blank=True)
    chosen_by = models.CharField(max_length=150, blank=True)
    chosen_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-chosen_at", "-id"]

    def __str__(self) -> str:
        return f"out-of-scope threshold {self.threshold:.2f} ({self.chosen_by or 'unknown'})"


def _regex_validate(pattern: str, *, field: str) -> None:
    try:
        re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise ValidationError({field: f"invalid regex: {exc}"}) from exc


# Receivers live here (not in apps.ready) so they are connected whenever the models
# are importable, including in migrations' data steps and management commands.
_VERSIONED_MODELS = (Intent, Utterance, ReplyTemplate, SlotPattern, Rule, OutOfScopePoint)


def _router_changed(sender: type[models.Model], **kwargs: Any) -> None:
    from routing.versioning import router_version_bump

    router_version_bump()


for _model in _VERSIONED_MODELS:
    receiver(post_save, sender=_model, dispatch_uid=f"routing_bump_save_{_model.__name__}")(
        _router_changed
    )
    receiver(post_delete, sender=_model, dispatch_uid=f"routing_bump_delete_{_model.__name__}")(
        _router_changed
    )


__all__ = [
    "ClassifierModel",
    "Intent",
    "OutOfScopePoint",
    "ReplyTemplate",
    "RetrainRun",
    "RouterVersion",
    "Rule",
    "SlotPattern",
    "Utterance",
]
