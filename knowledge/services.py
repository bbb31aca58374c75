"""Writes for the knowledge base: documents, ingestion, the knowledge-base version.

Ingestion is idempotent and atomic where it matters: parsing, chunking, embedding and
the summary run outside any transaction (they are slow), then one transaction swaps
the document's chunks and marks it ready. A worker killed before that commit leaves
the old chunks (or none) in place, never a half-written set; the re-delivered task
does the whole job again. A unique (document, position) constraint makes a duplicate
chunk impossible even if two deliveries race.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction
from django.db.models import Count, F, QuerySet
from django.utils import timezone

from inference.jobs import task_enqueue

from . import ingest
from .ingest import IngestError
from .models import Chunk, DeletedSeedDocument, Document, KnowledgeBaseVersion, SynonymSet

logger = logging.getLogger(__name__)

__all__ = [
    "IngestError",
    "document_create",
    "document_delete",
    "document_fail",
    "document_ingest",
    "document_reingest",
    "document_save",
    "kb_version_bump",
    "shop_words_changed",
    "synonym_set_delete",
    "synonym_set_save",
]


def kb_version_bump() -> int:
    """Every process rebuilds its index when this moves. Call inside the transaction
    that changed the chunks, so a process never sees the new version without them."""
    row, _ = KnowledgeBaseVersion.objects.get_or_create(pk=1)
    KnowledgeBaseVersion.objects.filter(pk=1).update(
        version=F("version") + 1, updated_at=timezone.now()
    )
    row.refresh_from_db()
    # This process's own change is searched on its next query, not after the interval.
    from .index import KB_VERSION

    transaction.on_commit(KB_VERSION.expire)
    return int(row.version)


def shop_words_changed() -> int:
    """The synonym sets changed: every process rebuilds its tables (and its index and
    answer caches, which depend on them) from the next knowledge-base version."""
    from .shop_words import SOURCE

    version = kb_version_bump()
    transaction.on_commit(SOURCE.expire)
    SOURCE.expire()
    return version


def synonym_seed_key(key: str) -> str:
    """How a deleted demo synonym set is remembered among the deleted demo articles."""
    return ("synonyms:" + key)[:80]


def synonym_set_save(*, synonym_set: SynonymSet) -> SynonymSet:
    """Save a synonym set (validated by the caller: ``SynonymSetForm``) and tell every
    process."""
    with transaction.atomic():
        synonym_set.save()
        shop_words_changed()
    return synonym_set


def synonym_set_delete(*, synonym_set_ids: list[int]) -> int:
    """Delete synonym sets; a demo one is remembered as deleted, so the next seed
    (``make run`` seeds on every start) does not bring it back."""
    with transaction.atomic():
        rows = SynonymSet.objects.filter(pk__in=synonym_set_ids)
        for row in rows.exclude(seed_key=None):
            DeletedSeedDocument.objects.get_or_create(
                seed_key=synonym_seed_key(row.seed_key or ""), defaults={"title": str(row)[:200]}
            )
        deleted, _ = rows.delete()
        if deleted:
            shop_words_changed()
    return deleted


def document_bytes(document: Document) -> bytes:
    if document.file:
        document.file.open("rb")
        try:
            return bytes(document.file.read())
        finally:
            document.file.close()
    return document.text.encode("utf-8")


def content_hash_of(*, title: str, language: str, source_format: str, data: bytes) -> str:
    digest = hashlib.sha256()
    for part in (title.strip(), language, source_format):
        digest.update(part.encode("utf-8") + b"\0")
    digest.update(data)
    return digest.hexdigest()


def _enqueue(document_id: int, *, force: bool = False) -> None:
    # After commit: the worker must find the row (and the file) we just wrote.
    transaction.on_commit(lambda: _send(document_id, force))


def queue_for(document_id: int) -> str | None:
    """The Celery queue for a document's work: the demo seed's articles as seeded go to
    the bulk queue (its own worker), a shop admin's, and a demo article an admin edited
    (version > 1), to the default one, so an admin's article is ingested and drafted
    while the demo knowledge base still drafts."""
    if Document.objects.filter(pk=document_id, version=1).exclude(seed_key=None).exists():
        return settings.TIERDESK_KB_BULK_QUEUE or None
    return None


def _send(document_id: int, force: bool) -> None:
    """Never raises: with the broker down the document is saved and stays pending, and
    beat's sweep (``ingest_requeue_stale``) enqueues it once the broker is back. A
    support admin's upload must not fail because Redis restarts."""
    try:
        task_enqueue(
            "knowledge.document_ingest", args=[document_id, force], queue=queue_for(document_id)
        )
    except Exception as exc:
        logger.warning(
            "broker unavailable, document %s stays pending until the sweep: %s", document_id, exc
        )


def _send_after_ingest(name: str, document_id: int) -> None:
    """Conflicts, generated questions, cards: a later ingestion or the sweep redoes
    them, so a broker that can't take one is logged, not raised."""
    try:
        task_enqueue(name, args=[document_id], queue=queue_for(document_id))
    except Exception as exc:
        logger.warning("broker unavailable, %s of document %s not run: %s", name, document_id, exc)


def document_save(*, document: Document, force: bool = False) -> Document:
    """Save a created or edited document; (re-)ingest it when its content changed.

    The admin calls this for every save. An unchanged document (same hash) keeps its
    chunks and is not re-ingested, unless ``force``."""
    if document.file and document.source_format == Document.Format.TEXT:
        document.source_format = Document.format_for_name(document.file.name or "")
    new_hash = content_hash_of(
        title=document.title,
        language=document.language,
        source_format=document.source_format,
        data=document_bytes(document),
    )
    changed = new_hash != document.content_hash
    with transaction.atomic():
        if changed:
            if document.pk is not None:
                document.version = (
                    Document.objects.filter(pk=document.pk)
                    .values_list("version", flat=True)
                    .first()
                    or document.version
                ) + 1
            document.content_hash = new_hash
        if changed or force:
            document.status = Document.Status.PENDING
            document.error = ""
            document.progress_done = 0
            document.progress_total = 0
        document.save()
        if changed or force:
            _enqueue(document.pk, force=force)
    return document


def document_create(
    *,
    title: str,
    language: str = "en",
    text: str = "",
    file_name: str = "",
    file_bytes: bytes | None = None,
    source_format: str = "",
    origin: str = "",
    seed_key: str | None = None,
) -> Document:
    document = Document(
        title=title,
        language=language,
        text=text if file_bytes is None else "",
        origin=origin,
        seed_key=seed_key,
        source_format=source_format
        or (Document.format_for_name(file_name) if file_name else Document.Format.TEXT),
    )
    if file_bytes is not None:
        document.file.save(file_name or "upload.txt", ContentFile(file_bytes), save=False)
    return document_save(document=document)


def document_import(*, file_name: str, data: bytes, language: str = "en") -> Document:
    """A shop's article file as a document: created, or the one imported before from a
    file of this name in this language updated (re-ingested only when it changed). The
    title is the file's first Markdown heading, else its name."""
    if language not in Document.Language.values:
        raise ValueError(f"language {language!r}: use one of {', '.join(Document.Language.values)}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{file_name}: not UTF-8 text") from exc
    heading = next(
        (line.lstrip("#").strip() for line in text.splitlines() if line.startswith("# ")), ""
    )
    title = (heading or Path(file_name).stem)[: Document._meta.get_field("title").max_length]
    document = Document.objects.filter(origin=file_name, language=language).first()
    if document is None:
        return document_create(
            title=title, language=language, file_name=file_name, file_bytes=data, origin=file_name
        )
    document.title = title
    document.file.save(file_name, ContentFile(data), save=False)
    return document_save(document=document)


def document_delete(*, document_id: int) -> None:
    """Chunks go with the document (cascade); the version bump tells every process."""
    with transaction.atomic():
        document = Document.objects.select_for_update().filter(pk=document_id).first()
        if document is None:
            return
        stored_file = document.file.name if document.file else ""
        storage = document.file.storage if document.file else None
        if document.seed_key:
            # The demo seed must not bring it back (knowledge.seed.knowledge_seed).
            DeletedSeedDocument.objects.update_or_create(
                seed_key=document.seed_key, defaults={"title": document.title}
            )
        document.delete()
        kb_version_bump()
        if storage is not None and stored_file:
            transaction.on_commit(lambda: storage.delete(stored_file))


def document_reingest(*, document_ids: list[int], force: bool = True) -> int:
    """Queue ingestion again (admin action). ``force`` rebuilds even unchanged content,
    e.g. after the embedding model or the chunk size changed."""
    count = 0
    with transaction.atomic():
        for document_id in document_ids:
            updated = Document.objects.filter(pk=document_id).update(
                status=Document.Status.PENDING, error="", progress_done=0, progress_total=0
            )
            if updated:
                _enqueue(document_id, force=force)
                count += 1
    return count


@dataclass(frozen=True)
class IngestionProgress:
    ready: int
    waiting: int  # pending or being ingested
    failed: int

    @property
    def total(self) -> int:
        return self.ready + self.waiting + self.failed


def ingestion_progress() -> IngestionProgress:
    """How many documents the worker has ingested, and how many it still has to."""
    counts = dict(Document.objects.values_list("status").annotate(n=Count("pk")).order_by())
    S = Document.Status
    return IngestionProgress(
        ready=counts.get(S.READY, 0),
        waiting=counts.get(S.PENDING, 0) + counts.get(S.INGESTING, 0),
        failed=counts.get(S.FAILED, 0),
    )


def document_fail(*, document_id: int, error: str) -> None:
    Document.objects.filter(pk=document_id).update(
        status=Document.Status.FAILED, error=error[:2000], updated_at=timezone.now()
    )


def document_retrying(*, document_id: int, error: str, attempt: int) -> None:
    Document.objects.filter(pk=document_id).update(
        status=Document.Status.PENDING,
        error=f"attempt {attempt} failed, retrying: {error}"[:2000],
    )


def _progress(document_id: int, done: int, total: int) -> None:
    # updated_at is the sign of life the sweeper (``ingest_requeue_stale``) looks at.
    Document.objects.filter(pk=document_id).update(
        progress_done=done, progress_total=total, updated_at=timezone.now()
    )


def ingest_requeue_stale(*, older_than_s: float) -> list[int]:
    """Enqueue again the documents whose ingestion nobody is running.

    acks_late covers a worker that dies: the broker hands the task out again. It can't
    cover a broker that loses its queue (a Redis restart without persistence, a
    flushed database): the document would wait as "pending" for ever. Beat calls this
    every ``TIERDESK_KB_SWEEP_S``; a document pending or ingesting with no sign of life
    for ``older_than_s`` is enqueued again. Ingestion is idempotent, so a task that was
    only slow, not lost, costs one skipped run."""
    cutoff = timezone.now() - timedelta(seconds=older_than_s)
    with transaction.atomic():
        stale = list(
            Document.objects.select_for_update(skip_locked=True)
            .filter(
                status__in=[Document.Status.PENDING, Document.Status.INGESTING],
                updated_at__lt=cutoff,
            )
            .values_list("pk", flat=True)
        )
        # Touched, so the next sweep waits a whole interval before trying again.
        Document.objects.filter(pk__in=stale).update(updated_at=timezone.now())
        for document_id in stale:
            _enqueue(document_id)
    if stale:
        logger.warning("re-enqueued %d stale ingestion(s): %s", len(stale), stale)
    # Documents ingested before the multilingual embedder was on get its vectors.
    backfill = [d for d in documents_missing_multilingual() if d not in stale]
    for document_id in backfill:
        _enqueue(document_id)
    if backfill:
        logger.info("enqueued %d document(s) for their multilingual vectors", len(backfill))
    # Documents ingested before generated questions existed get theirs.
    for document_id in documents_missing_questions():
        _send_after_ingest("knowledge.section_questions_sync", document_id)
    return stale


def documents_missing_questions() -> list[int]:
    """Ready documents with chunks and not one generated question (ingested before the
    questions existed, or their task was lost)."""
    from .models import SectionQuestion

    return list(
        Document.objects.filter(status=Document.Status.READY, chunk_count__gt=0)
        .exclude(pk__in=SectionQuestion.objects.values("document_id"))
        .order_by("pk")
        .values_list("pk", flat=True)
    )


@dataclass
class IngestOutcome:
    result: str  # ready | skipped | stale | missing
    chunks: int = 0
    seconds: float = 0.0


def _lacking_multilingual() -> QuerySet[Document]:
    """Documents with chunks that lack the multilingual vectors their language gets
    (ingested before the embedder was on, or before their language was configured):
    ingesting them again adds them. One query however many documents there are."""
    from . import multilingual

    languages = [
        x for x in settings.TIERDESK_KB_MULTILINGUAL_LANGUAGES if multilingual.enabled_for(x)
    ]
    return Document.objects.filter(
        language__in=languages, chunks__embedding_multilingual__isnull=True
    ).distinct()


def _multilingual_missing(document: Document) -> bool:
    return _lacking_multilingual().filter(pk=document.pk).exists()


def documents_missing_multilingual() -> list[int]:
    """Ready documents lacking the multilingual vectors (the sweeper calls this on
    every beat; the seed command too)."""
    return list(
        _lacking_multilingual()
        .filter(status=Document.Status.READY)
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def _drafts_embed(
    document: Document, drafts: list[ingest.ChunkDraft], total: int
) -> tuple[list[Any], list[Any]]:
    """The chunks' vectors, in batches that report progress, and their multilingual
    vectors (None for a language the multilingual embedder doesn't take)."""
    from . import embedding, multilingual

    texts = [
        ingest.embedding_text(title=document.title, heading=d.heading, text=d.text) for d in drafts
    ]
    vectors: list[Any] = []
    batch = 16
    for start in range(0, len(texts), batch):
        vectors.extend(embedding.embed_texts(texts[start : start + batch]))
        _progress(document.pk, min(start + batch, len(texts)), total)

    # Chinese (by default) also gets the multilingual vector: MiniLM doesn't read it.
    multilingual_vectors: list[Any] = (
        list(multilingual.embed_passages(texts))
        if multilingual.enabled_for(document.language)
        else [None] * len(texts)
    )
    return vectors, multilingual_vectors


def _chunks(
    document_id: int,
    drafts: list[ingest.ChunkDraft],
    vectors: list[Any],
    multilingual_vectors: list[Any],
    content_hash: str,
) -> list[Chunk]:
    from . import embedding

    return [
        Chunk(
            document_id=document_id,
            position=d.position,
            anchor=d.anchor,
            heading=d.heading,
            text=d.text,
            token_count=d.token_count,
            embedding=embedding.to_bytes(vector),
            embedding_multilingual=None if other is None else embedding.to_bytes(other),
            content_hash=content_hash,
        )
        for d, vector, other in zip(drafts, vectors, multilingual_vectors, strict=True)
    ]


def document_ingest(*, document_id: int, force: bool = False) -> IngestOutcome:
    """Parse, chunk, embed and summarise one document, then swap its chunks in.

    Idempotent: content already ingested (same hash) is skipped; a document edited
    while we worked is left to the task its edit queued ("stale")."""
    from . import embedding

    started = time.perf_counter()
    document = Document.objects.filter(pk=document_id).first()
    if document is None:
        return IngestOutcome("missing")
    if (
        not force
        and document.status == Document.Status.READY
        and document.ingested_hash == document.content_hash
        and not _multilingual_missing(document)
    ):
        return IngestOutcome("skipped", document.chunk_count)
    version, content_hash = document.version, document.content_hash
    Document.objects.filter(pk=document_id).update(
        status=Document.Status.INGESTING,
        progress_done=0,
        progress_total=0,
        attempts=F("attempts") + 1,
    )

    sections = ingest.document_sections(
        data=document_bytes(document), source_format=document.source_format
    )
    drafts = ingest.sections_chunk(sections)
    # +1: the summary is the last step.
    total = len(drafts) + 1
    _progress(document_id, 0, total)

    vectors, multilingual_vectors = _drafts_embed(document, drafts, total)

    summary = document_summarise(document=document, sections=sections)
    summary_vector = embedding.embed_texts([f"{document.title}\n{summary}"])[0]

    with transaction.atomic():
        locked = Document.objects.select_for_update().filter(pk=document_id).first()
        if locked is None:
            return IngestOutcome("missing")
        if locked.version != version or locked.content_hash != content_hash:
            return IngestOutcome("stale")
        Chunk.objects.filter(document_id=document_id).delete()
        Chunk.objects.bulk_create(
            _chunks(document_id, drafts, vectors, multilingual_vectors, content_hash)
        )
        Document.objects.filter(pk=document_id).update(
            status=Document.Status.READY,
            error="",
            summary=summary,
            summary_embedding=embedding.to_bytes(summary_vector),
            chunk_count=len(drafts),
            ingested_hash=content_hash,
            ingested_version=version,
            ingested_at=timezone.now(),
            progress_done=total,
            progress_total=total,
        )
        kb_version_bump()
        # The cards are drafted by their own task: a model may write them, and the
        # article is searchable (and answerable by extract) before they exist.
        # Conflicts first: the check is quick; questions and cards may wait on a model.
        transaction.on_commit(lambda: _send_after_ingest("knowledge.conflicts_check", document_id))
        transaction.on_commit(
            lambda: _send_after_ingest("knowledge.section_questions_sync", document_id)
        )
        transaction.on_commit(lambda: _send_after_ingest("knowledge.cards_sync", document_id))
    seconds = time.perf_counter() - started
    logger.info("ingested document %s (%d chunks) in %.2fs", document_id, len(drafts), seconds)
    return IngestOutcome("ready", len(drafts), seconds)


def document_summarise(*, document: Document, sections: list[ingest.Section]) -> str:
    """At most TIERDESK_KB_SUMMARY_WORDS words, by the fast model (docs/product.md); an
    extractive summary when the model is off, fails, or writes something unusable."""
    max_words = settings.TIERDESK_KB_SUMMARY_WORDS
    fallback = ingest.summary_fallback(
        sections=sections, language=document.language, max_words=max_words
    )
    role = settings.TIERDESK_KB_SUMMARY_ROLE
    if not role:
        return fallback
    from inference.base import GenerationRequest, InferenceError
    from inference.registry import get_backend

    body = "\n".join(s.text for s in sections)
    prompt = ingest.summary_prompt(title=document.title, body=body, language=document.language)
    try:
        backend = get_backend(role)
        complete = getattr(backend, "complete", None)
        request = GenerationRequest(
            prompt=prompt, max_tokens=90, temperature=0.1, stop=("\n",), seed=7
        )
        if complete is not None:
            raw, _usage = complete(request)
        else:
            raw = "".join(chunk.text for chunk in backend.stream(request))
    except InferenceError as exc:
        logger.warning("summary model failed for document %s: %s", document.pk, exc)
        return fallback
    summary = ingest.summary_clean(raw, language=document.language, max_words=max_words)
    summary = ingest.summary_check(summary, body=body)
    if not ingest.summary_usable(summary, body=body):
        logger.info("summary of document %s unusable (%r); extractive", document.pk, summary)
        return fallback
    return summary
