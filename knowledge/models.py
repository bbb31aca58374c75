"""The knowledge base: documents, their chunks and the knowledge-base version.

The database is the system of record. Every process keeps an in-memory search index
built from these rows (``knowledge.index``) and rebuilds it when
``KnowledgeBaseVersion`` moves, so an edit in Django admin reaches every Daphne
process within ``TIERDESK_KB_REFRESH_S`` seconds, without a restart.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from django.db import models
from django.utils.translation import gettext_lazy as _


class KnowledgeBaseVersion(models.Model):
    """A single row; bumped (in the same transaction) by every change that alters
    what retrieval can return: an ingestion that finished, a deletion."""

    version = models.PositiveBigIntegerField(default=0, verbose_name=_("version"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name_plural = _("knowledge-base versions")
        verbose_name = _("knowledge-base version")

    def __str__(self) -> str:
        return f"knowledge base v{self.version}"


class DeletedSeedDocument(models.Model):
    """A demo article a support admin deleted. ``make run`` seeds the demo shop on every
    start; without this row the seed would bring the article back, and the bot would
    again answer from a policy the shop removed (a false statement to shoppers).
    Deleting this row lets the next seed restore the article."""

    seed_key = models.CharField(max_length=80, unique=True, verbose_name=_("seed key"))
    title = models.CharField(max_length=200, blank=True, verbose_name=_("title"))
    deleted_at = models.DateTimeField(auto_now_add=True, verbose_name=_("deleted at"))

    class Meta:
        verbose_name_plural = _("deleted demo articles")
        ordering = ["-deleted_at"]
        verbose_name = _("deleted demo article")

    def __str__(self) -> str:
        return self.title or self.seed_key


class Document(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", _("pending")
        INGESTING = "ingesting", _("ingesting")
        READY = "ready", _("ready")
        FAILED = "failed", _("failed")

    class Format(models.TextChoices):
        TEXT = "text", _("plain text")
        MARKDOWN = "markdown", _("Markdown")
        HTML = "html", _("HTML")
        PDF = "pdf", _("PDF")

    class Language(models.TextChoices):
        EN = "en", _("English")
        ZH = "zh", _("Chinese")

    title = models.CharField(max_length=200, verbose_name=_("title"))
    language = models.CharField(
        max_length=8, choices=Language.choices, default=Language.EN, verbose_name=_("language")
    )
    # Either an uploaded file or pasted text; the format says how to parse it.
    file = models.FileField(upload_to="knowledge/%Y/%m/", blank=True, verbose_name=_("file"))
    text = models.TextField(
        blank=True,
        help_text=_("Pasted text (used when no file is uploaded)."),
        verbose_name=_("text"),
    )
    source_format = models.CharField(
        max_length=16, choices=Format.choices, default=Format.TEXT, verbose_name=_("source format")
    )
    # Where the content came from (a URL, a file in third_party/...): shown to admins.
    origin = models.CharField(max_length=300, blank=True, verbose_name=_("origin"))
    # Stable key for documents the demo seed owns, so re-seeding never duplicates.
    seed_key = models.CharField(
        max_length=80, blank=True, null=True, unique=True, verbose_name=_("seed key")
    )

    # sha256 of title, language, format and content: ingestion skips a document whose
    # chunks were already built from exactly this hash.
    content_hash = models.CharField(max_length=64, blank=True, verbose_name=_("content hash"))
    # Bumped whenever content_hash changes (an edit), so a stale task can tell.
    version = models.PositiveIntegerField(default=1, verbose_name=_("version"))
    ingested_hash = models.CharField(max_length=64, blank=True, verbose_name=_("ingested hash"))
    ingested_version = models.PositiveIntegerField(default=0, verbose_name=_("ingested version"))

    status = models.CharField(
        max_length=16,
        choices=Status.choices,
        default=Status.PENDING,
        db_index=True,
        verbose_name=_("status"),
    )
    error = models.TextField(blank=True, verbose_name=_("error"))
    progress_done = models.PositiveIntegerField(default=0, verbose_name=_("progress done"))
    progress_total = models.PositiveIntegerField(default=0, verbose_name=_("progress total"))
    attempts = models.PositiveIntegerField(default=0, verbose_name=_("attempts"))

    summary = models.TextField(blank=True, verbose_name=_("summary"))
    summary_embedding = models.BinaryField(
        null=True, blank=True, editable=False, verbose_name=_("summary embedding")
    )
    chunk_count = models.PositiveIntegerField(default=0, verbose_name=_("chunk count"))

    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))
    ingested_at = models.DateTimeField(null=True, blank=True, verbose_name=_("ingested at"))

    class Meta:
        verbose_name = _("document")
        verbose_name_plural = _("documents")
        ordering = ["title"]
        indexes = [models.Index(fields=["language", "status"])]

    def __str__(self) -> str:
        return self.title

    @property
    def is_file(self) -> bool:
        return bool(self.file)

    @staticmethod
    def format_for_name(name: str) -> str:
        suffix = Path(name).suffix.lower()
        return {
            ".pdf": Document.Format.PDF,
            ".html": Document.Format.HTML,
            ".htm": Document.Format.HTML,
            ".md": Document.Format.MARKDOWN,
            ".markdown": Document.Format.MARKDOWN,
        }.get(suffix, Document.Format.TEXT)


class Chunk(models.Model):
    document = models.ForeignKey(
        Document, on_delete=models.CASCADE, related_name="chunks", verbose_name=_("document")
    )
    position = models.PositiveIntegerField(verbose_name=_("position"))
    # Where in the document the chunk is: "returns-policy" (a heading), "p3" (a PDF
    # page) or "s2" (a section of plain text); "#<position>" is appended when a
    # section has several chunks. Citations link to it.
    anchor = models.CharField(max_length=160, verbose_name=_("anchor"))
    heading = models.CharField(max_length=200, blank=True, verbose_name=_("heading"))
    text = models.TextField(verbose_name=_("text"))
    token_count = models.PositiveIntegerField(default=0, verbose_name=_("token count"))
    # float32, L2-normalised, little-endian: portable across SQLite and PostgreSQL.
    embedding = models.BinaryField(verbose_name=_("embedding"))
    # The same text by the multilingual embedder (knowledge/multilingual.py), for the
    # languages it is configured for; empty elsewhere and for chunks ingested before it.
    embedding_multilingual = models.BinaryField(
        null=True, blank=True, editable=False, verbose_name=_("embedding multilingual")
    )
    # The document content the chunk was built from.
    content_hash = models.CharField(max_length=64, verbose_name=_("content hash"))

    class Meta:
        verbose_name = _("chunk")
        verbose_name_plural = _("chunks")
        ordering = ["document_id", "position"]
        constraints = [
            # Retries and re-deliveries can never leave two chunks in one place.
            models.UniqueConstraint(fields=["document", "position"], name="chunk_unique_position")
        ]

    def __str__(self) -> str:
        return f"{self.document_id}:{self.anchor}"

    def vector(self) -> np.ndarray:
        return np.frombuffer(bytes(self.embedding), dtype="<f4")


class AnswerCard(models.Model):
    """An approved answer: a few question phrasings and a short answer, drafted from one
    section of an article, checked against it, and reviewed by a support admin.

    L2 serves an approved card directly when a shopper's question matches one of its
    phrasings (``knowledge.cards``): no generation, so no invented claim. When the
    article changes, the cards of the changed sections go back to review with the old
    and new text kept for the diff; only ``approved`` cards reach shoppers (and drafts,
    if the shop turns ``TIERDESK_KB_SERVE_DRAFTS`` on)."""

    class Status(models.TextChoices):
        DRAFT = "draft", _("draft: awaiting review")
        APPROVED = "approved", _("approved")
        REJECTED = "rejected", _("rejected")
        STALE = "stale", _("article changed: review again")

    document = models.ForeignKey(
        Document, on_delete=models.CASCADE, related_name="cards", verbose_name=_("document")
    )
    language = models.CharField(max_length=8, default="en", verbose_name=_("language"))
    # The section the card answers from (Chunk.anchor without the "#n" suffix).
    anchor = models.CharField(max_length=160, verbose_name=_("anchor"))
    heading = models.CharField(max_length=200, blank=True, verbose_name=_("heading"))
    # The section's text when the card was drafted, and before the last change (diff).
    section_text = models.TextField(verbose_name=_("section text"))
    section_hash = models.CharField(max_length=64, db_index=True, verbose_name=_("section hash"))
    previous_section_text = models.TextField(blank=True, verbose_name=_("previous section text"))
    previous_answer = models.TextField(blank=True, verbose_name=_("previous answer"))

    questions = models.JSONField(
        default=list, help_text=_("One phrasing a line."), verbose_name=_("questions")
    )
    answer = models.TextField(verbose_name=_("answer"))
    status = models.CharField(
        max_length=16,
        choices=Status.choices,
        default=Status.DRAFT,
        db_index=True,
        verbose_name=_("status"),
    )
    # What wrote it ("model:<id>" or "extractive") and the entailment check's verdict
    # on its answer against the section ({"entailed": bool, "claims": [...]}).
    drafted_by = models.CharField(max_length=120, blank=True, verbose_name=_("drafted by"))
    verdict = models.JSONField(default=dict, blank=True, verbose_name=_("verdict"))
    # float32 (n_questions x dim), L2-normalised: the phrasings' embeddings.
    embedding = models.BinaryField(
        null=True, blank=True, editable=False, verbose_name=_("embedding")
    )

    reviewed_by = models.ForeignKey(
        "auth.User",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("reviewed by"),
    )
    reviewed_at = models.DateTimeField(null=True, blank=True, verbose_name=_("reviewed at"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("answer card")
        verbose_name_plural = _("answer cards")
        ordering = ["document_id", "anchor"]
        indexes = [models.Index(fields=["status", "language"])]
        constraints = [
            models.UniqueConstraint(fields=["document", "anchor"], name="card_unique_section")
        ]

    def __str__(self) -> str:
        first = self.questions[0] if self.questions else self.heading
        return f"{first} ({self.get_status_display()})"

    @property
    def entailed(self) -> bool:
        return bool(self.verdict.get("entailed"))


class SectionQuestion(models.Model):
    """A question a shopper might ask that one section of an article answers, written at
    ingestion (``knowledge.section_questions``) and matched against shoppers' questions
    beside the section's own text and the section's card.

    ``role`` says what it is: another wording of what the section is about, or an
    instance of its rule (a place, a product, a case the rule covers). ``source`` says
    who wrote it: the worker, or a support admin on the card page. A generated question
    the admin deleted stays as ``suppressed`` so the next regeneration does not bring it
    back; the admin's own questions survive regeneration."""

    class Role(models.TextChoices):
        WORDING = "wording", _("another wording")
        INSTANCE = "instance", _("a case the section covers")

    class Source(models.TextChoices):
        GENERATED = "generated", _("generated")
        EDITED = "edited", _("written by a support admin")

    document = models.ForeignKey(
        Document,
        on_delete=models.CASCADE,
        related_name="section_questions",
        verbose_name=_("document"),
    )
    # The section (Chunk.anchor without the "#n" suffix; AnswerCard.anchor).
    anchor = models.CharField(max_length=160, verbose_name=_("anchor"))
    # The section text the generated questions were written from.
    section_hash = models.CharField(max_length=64, blank=True, verbose_name=_("section hash"))
    text = models.CharField(max_length=300, verbose_name=_("question"))
    language = models.CharField(max_length=8, default="en", verbose_name=_("language"))
    role = models.CharField(
        max_length=16, choices=Role.choices, default=Role.WORDING, verbose_name=_("role")
    )
    source = models.CharField(
        max_length=16, choices=Source.choices, default=Source.GENERATED, verbose_name=_("source")
    )
    suppressed = models.BooleanField(default=False, verbose_name=_("deleted by an admin"))
    # float32, L2-normalised, by the multilingual embedder (e5's "query: " side, as a
    # shopper's question is embedded); empty when the embedder is off.
    embedding = models.BinaryField(
        null=True, blank=True, editable=False, verbose_name=_("embedding")
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("generated question")
        verbose_name_plural = _("generated questions")
        ordering = ["document_id", "anchor", "pk"]
        indexes = [models.Index(fields=["document", "anchor"])]
        constraints = [
            models.UniqueConstraint(
                fields=["document", "anchor", "text"], name="section_question_unique"
            )
        ]

    def __str__(self) -> str:
        return self.text


class SynonymSet(models.Model):
    """The shop's own words, per language, edited in Django admin (``knowledge.shop_words``
    reads the enabled ones): what shoppers call the things the articles name.

    - ``equivalent``: every term means the same ("postage, shipping, delivery");
    - ``broader``: one way, each term is covered by the target: a rule stated for
      "France" answers a question about Lyon, never the other way round;
    - ``goods``: kinds of the shop's goods, covered by a rule about items or products
      in general (``knowledge.text.GOODS_IN_GENERAL``).

    Terms are separated by commas or new lines; English terms are compared by stem, so
    "ship" also finds "shipping"."""

    class Kind(models.TextChoices):
        EQUIVALENT = "equivalent", _("equivalent: all the terms mean the same")
        BROADER = "broader", _("broader: each term is covered by the target")
        GOODS = "goods", _("kinds of goods: covered by a rule about items in general")

    language = models.CharField(
        max_length=8, choices=Document.Language.choices, default=Document.Language.EN
    )
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.EQUIVALENT)
    terms = models.TextField(help_text="Separated by commas or new lines.")
    target = models.CharField(
        max_length=300,
        blank=True,
        help_text="Broader sets only: what the terms are covered by (commas between several).",
    )
    note = models.CharField(max_length=300, blank=True)
    enabled = models.BooleanField(default=True)
    # Stable key for the sets the demo seed owns, so re-seeding never duplicates.
    seed_key = models.CharField(max_length=120, blank=True, null=True, unique=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["language", "kind", "pk"]
        verbose_name = _("synonym set")
        verbose_name_plural = _("synonym sets")

    def __str__(self) -> str:
        terms = ", ".join(self.term_list())
        if self.kind == self.Kind.BROADER:
            return f"{terms} → {self.target}"
        return terms

    def term_list(self) -> list[str]:
        return split_terms(self.terms)

    def target_list(self) -> list[str]:
        return split_terms(self.target)


def split_terms(value: str) -> list[str]:
    """ "a, b\\nc" -> ["a", "b", "c"]: commas (also the Chinese ones) or new lines."""
    parts = value.replace("，", ",").replace("、", ",").replace("\n", ",").split(",")
    return [" ".join(p.split()) for p in parts if p.strip()]


class KnowledgeConflict(models.Model):
    """Two sections of different articles that state different values about one
    subject (a price, a duration, a percentage, a yes and a no), found at ingestion
    (``knowledge.conflicts``). Until a support admin resolves it, L2 cites both
    sections for a question about its subject and offers a person, never one side."""

    class Status(models.TextChoices):
        OPEN = "open", _("open")
        RESOLVED = "resolved", _("resolved")

    class Resolution(models.TextChoices):
        KEPT_A = "kept_a", _("kept the first article")
        KEPT_B = "kept_b", _("kept the second article")
        BOTH_RIGHT = "both_right", _("both are right")
        EDITED = "edited", _("an article was edited")

    class Kind(models.TextChoices):
        MONEY = "money", _("price")
        DURATION = "duration", _("duration")
        PERCENT = "percent", _("percentage")
        POLARITY = "polarity", _("yes or no")

    # Sections are kept by (document, anchor) and copied: chunks are replaced on every
    # ingestion, a conflict outlives that.
    document_a = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    anchor_a = models.CharField(max_length=160)
    heading_a = models.CharField(max_length=200, blank=True)
    text_a = models.TextField()
    value_a = models.CharField(max_length=80)
    sentence_a = models.TextField(blank=True)
    document_b = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    anchor_b = models.CharField(max_length=160)
    heading_b = models.CharField(max_length=200, blank=True)
    text_b = models.TextField()
    value_b = models.CharField(max_length=80)
    sentence_b = models.TextField(blank=True)

    kind = models.CharField(max_length=16, choices=Kind.choices)
    # The subject words both values are stated about (stems; jieba words for Chinese).
    subject = models.JSONField(default=list)
    language = models.CharField(max_length=8, default="en")
    similarity = models.FloatField(default=0.0)

    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.OPEN, db_index=True
    )
    resolution = models.CharField(max_length=16, choices=Resolution.choices, blank=True)
    resolved_by = models.ForeignKey(
        "auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    resolved_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["status", "-created_at"]
        verbose_name = _("conflict between articles")
        verbose_name_plural = _("conflicts between articles")

    def __str__(self) -> str:
        return f"{self.value_a} / {self.value_b} ({' '.join(self.subject)})"

    def key(self) -> tuple[int, str, int, str, str, str, str]:
        return (
            self.document_a_id,
            self.anchor_a,
            self.document_b_id,
            self.anchor_b,
            self.kind,
            self.value_a,
            self.value_b,
        )
