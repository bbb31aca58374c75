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
from django.utils.translation import gettext_lazy as _

from routing.types import CLARIFY, L1, L2, L3

TIER_CHOICES = [
    (L1, _("L1 fast (templated)")),
    (L2, _("L2 knowledge (RAG)")),
    (L3, _("L3 large model")),
    (CLARIFY, _("Ask a clarifying question")),
]
LANGUAGE_CHOICES = [("en", _("English")), ("zh", _("Chinese"))]
LANGUAGES = ("en", "zh")


class Intent(models.Model):
    name = models.SlugField(max_length=64, unique=True, verbose_name=_("name"))
    tier = models.CharField(max_length=16, choices=TIER_CHOICES, verbose_name=_("tier"))
    description = models.TextField(blank=True, verbose_name=_("description"))
    # Disabling an intent removes it from the classifier and disables its rules,
    # without losing its utterances and templates.
    enabled = models.BooleanField(default=True, verbose_name=_("enabled"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))
    # See Rule.seed_hash.
    seed_hash = models.CharField(
        max_length=64, blank=True, default="", editable=False, verbose_name=_("seed hash")
    )

    class Meta:
        verbose_name = _("intent")
        verbose_name_plural = _("intents")
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.tier})"


class Utterance(models.Model):
    intent = models.ForeignKey(
        Intent, on_delete=models.CASCADE, related_name="utterances", verbose_name=_("intent")
    )
    language = models.CharField(max_length=8, choices=LANGUAGE_CHOICES, verbose_name=_("language"))
    text = models.CharField(max_length=500, verbose_name=_("text"))

    class Meta:
        verbose_name = _("utterance")
        verbose_name_plural = _("utterances")
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
    intent = models.ForeignKey(
        Intent, on_delete=models.CASCADE, related_name="templates", verbose_name=_("intent")
    )
    key = models.SlugField(
        max_length=64, help_text=_('e.g. "default", "pending", "confirm".'), verbose_name=_("key")
    )
    language = models.CharField(max_length=8, choices=LANGUAGE_CHOICES, verbose_name=_("language"))
    text = models.TextField(
        help_text=_("str.format placeholders, e.g. {order_id} {status}."), verbose_name=_("text")
    )
    # See Rule.seed_hash.
    seed_hash = models.CharField(
        max_length=64, blank=True, default="", editable=False, verbose_name=_("seed hash")
    )

    class Meta:
        verbose_name = _("reply template")
        verbose_name_plural = _("reply templates")
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
        help_text=_(
            'Slot name, e.g. "order_id", "email", "zip". order_id, email and zip values '
            "are normalised in code (order ids become #W1234567)."
        ),
        verbose_name=_("name"),
    )
    regex = models.TextField(
        help_text=_(
            "Python regex, matched case-insensitively. A named group (?P<value>...) "
            "picks the value; otherwise the whole match is used."
        ),
        verbose_name=_("regex"),
    )
    intent = models.ForeignKey(
        Intent,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="slot_patterns",
        help_text=_("Only extract for this intent; empty means every message."),
        verbose_name=_("intent"),
    )
    enabled = models.BooleanField(default=True, verbose_name=_("enabled"))
    # See Rule.seed_hash.
    seed_hash = models.CharField(
        max_length=64, blank=True, default="", editable=False, verbose_name=_("seed hash")
    )

    class Meta:
        verbose_name = _("slot pattern")
        verbose_name_plural = _("slot patterns")
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        _regex_validate(self.regex, field="regex")


class Rule(models.Model):
    KIND_REGEX = "regex"
    KIND_KEYWORDS = "keywords"
    KIND_CHOICES = [(KIND_REGEX, _("Regular expression")), (KIND_KEYWORDS, _("Keyword density"))]

    name = models.SlugField(max_length=64, unique=True, verbose_name=_("name"))
    kind = models.CharField(max_length=16, choices=KIND_CHOICES, verbose_name=_("kind"))
    pattern = models.TextField(
        blank=True,
        help_text=_("regex rules: Python regex on the normalised (lower-case, NFKC) message."),
        verbose_name=_("pattern"),
    )
    keywords = models.JSONField(
        default=list,
        blank=True,
        help_text=_('keyword rules: JSON list, e.g. ["unacceptable", "投诉"].'),
        verbose_name=_("keywords"),
    )
    min_density = models.FloatField(
        default=0.0,
        help_text=_(
            "keyword rules: fires when keywords cover at least this share of the "
            "message's tokens (a token is a word or one Chinese character)."
        ),
        verbose_name=_("min density"),
    )
    min_matches = models.PositiveSmallIntegerField(
        default=1,
        help_text=_(
            "regex rules: fires when the pattern matches at least this many times "
            "(2 with a question-clause pattern means several questions in one message)."
        ),
        verbose_name=_("min matches"),
    )
    tier = models.CharField(
        max_length=16,
        choices=TIER_CHOICES,
        blank=True,
        help_text=_("Empty: the intent's tier."),
        verbose_name=_("tier"),
    )
    intent = models.ForeignKey(
        Intent, on_delete=models.CASCADE, related_name="rules", verbose_name=_("intent")
    )
    priority = models.IntegerField(
        default=100, help_text=_("Lower runs first; first match wins."), verbose_name=_("priority")
    )
    languages = models.JSONField(
        default=list,
        blank=True,
        help_text=_('e.g. ["en"]; empty means every language.'),
        verbose_name=_("languages"),
    )
    enabled = models.BooleanField(default=True, verbose_name=_("enabled"))
    # The seed this row came from (routing/seed.py): a hash of the values the seed
    # wrote, so an upgrade can tell an untouched row (updated to the new seed) from one
    # a support admin edited (kept). Empty: not seeded, or seeded before this existed.
    seed_hash = models.CharField(
        max_length=64, blank=True, default="", editable=False, verbose_name=_("seed hash")
    )

    class Meta:
        verbose_name = _("rule")
        verbose_name_plural = _("rules")
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

    version = models.PositiveBigIntegerField(default=0, verbose_name=_("version"))
    stamp = models.UUIDField(default=uuid.uuid4, verbose_name=_("stamp"))
    changed_at = models.DateTimeField(auto_now=True, verbose_name=_("changed at"))

    class Meta:
        verbose_name = _("router version")
        verbose_name_plural = _("router versions")

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

    data_hash = models.CharField(max_length=64, unique=True, verbose_name=_("data hash"))
    router_version = models.PositiveBigIntegerField(
        help_text=_("The latest router version this model was confirmed for."),
        verbose_name=_("router version"),
    )
    sample_count = models.PositiveIntegerField(verbose_name=_("sample count"))
    intent_count = models.PositiveSmallIntegerField(verbose_name=_("intent count"))
    train_seconds = models.FloatField(
        help_text=_("Wall time of the training run."), verbose_name=_("train seconds")
    )
    trained_at = models.DateTimeField(verbose_name=_("trained at"))
    trained_by = models.CharField(
        max_length=128,
        blank=True,
        help_text=_('"celery:<hostname>" or "process:<pid>".'),
        verbose_name=_("trained by"),
    )
    # A model pickled by one scikit-learn must not be loaded by another.
    sklearn_version = models.CharField(max_length=32, verbose_name=_("sklearn version"))
    size_bytes = models.PositiveIntegerField(verbose_name=_("size bytes"))
    # zlib-compressed pickle of routing.classifier.TrainedClassifier. Only Tierdesk's
    # own code writes this column; never load a blob from elsewhere.
    blob = models.BinaryField(verbose_name=_("blob"))

    class Meta:
        verbose_name = _("classifier model")
        verbose_name_plural = _("classifier models")
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

    router_version = models.PositiveBigIntegerField(unique=True, verbose_name=_("router version"))
    status = models.CharField(
        max_length=16, choices=STATUS_CHOICES, default=QUEUED, verbose_name=_("status")
    )
    stage = models.CharField(max_length=200, blank=True, verbose_name=_("stage"))
    progress = models.FloatField(default=0.0, help_text=_("0 to 1"), verbose_name=_("progress"))
    queued_at = models.DateTimeField(auto_now_add=True, verbose_name=_("queued at"))
    started_at = models.DateTimeField(null=True, blank=True, verbose_name=_("started at"))
    finished_at = models.DateTimeField(null=True, blank=True, verbose_name=_("finished at"))
    result = models.JSONField(default=dict, blank=True, verbose_name=_("result"))

    class Meta:
        verbose_name = _("retrain run")
        verbose_name_plural = _("retrain runs")
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

    threshold = models.FloatField(
        help_text=_("0 to 1: the clarify threshold on the top probability"),
        verbose_name=_("threshold"),
    )
    # What the curve promised at this point when it was chosen (held-out examples and
    # off-topic text of the model then in use), for the record.
    in_scope_accuracy = models.FloatField(
        null=True, blank=True, verbose_name=_("in scope accuracy")
    )
    oos_recall = models.FloatField(null=True, blank=True, verbose_name=_("oos recall"))
    chosen_by = models.CharField(max_length=150, blank=True, verbose_name=_("chosen by"))
    chosen_at = models.DateTimeField(auto_now_add=True, verbose_name=_("chosen at"))

    class Meta:
        verbose_name = _("out of scope point")
        verbose_name_plural = _("out of scope points")
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
