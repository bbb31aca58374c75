"""Ingestion: parsing (Markdown, HTML, PDF, text), chunking with anchors, embeddings,
summaries, idempotency by hash, edits and deletes that keep chunks consistent."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from knowledge import services
from knowledge.ingest import IngestError, document_sections, sections_chunk
from knowledge.models import Chunk, Document, KnowledgeBaseVersion
from knowledge.tasks import document_ingest_task

pytestmark = pytest.mark.django_db

ARTICLE = """# Gift cards

## Values

Gift cards come in values from $10 to $500.

## Expiry

Gift cards never expire and can be used online or in any store.
"""


def make(text: str = ARTICLE, **kwargs: Any) -> Document:
    kwargs.setdefault("title", "Gift card FAQ")
    kwargs.setdefault("language", "en")
    kwargs.setdefault("source_format", "markdown")
    return services.document_create(text=text, **kwargs)


def kb_version() -> int:
    row = KnowledgeBaseVersion.objects.filter(pk=1).first()
    return row.version if row else 0


def test_markdown_document_is_chunked_under_its_headings_and_embedded(
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks() as callbacks:
        doc = make()
    # Saving queues the Celery task after commit (and only then).
    assert len(callbacks) == 1 and doc.status == Document.Status.PENDING
    before = kb_version()
    outcome = services.document_ingest(document_id=doc.pk)
    doc.refresh_from_db()
    assert outcome.result == "ready" and doc.status == Document.Status.READY
    chunks = list(doc.chunks.order_by("position"))
    assert [c.anchor for c in chunks] == ["values", "expiry"]
    assert [c.position for c in chunks] == [0, 1]
    assert chunks[1].heading == "Gift cards > Expiry" and "never expire" in chunks[1].text
    vector = chunks[0].vector()
    assert vector.shape == (384,) and abs(float(np.linalg.norm(vector)) - 1.0) < 1e-3
    assert doc.summary and len(doc.summary.split()) <= 50
    assert doc.summary_embedding is not None and len(bytes(doc.summary_embedding)) == 384 * 4
    assert doc.chunk_count == 2 and doc.progress_done == doc.progress_total == 3
    assert kb_version() == before + 1


def test_unchanged_content_is_skipped_and_force_rebuilds_without_duplicates() -> None:
    doc = make()
    services.document_ingest(document_id=doc.pk)
    ids = set(Chunk.objects.filter(document=doc).values_list("pk", flat=True))
    assert services.document_ingest(document_id=doc.pk).result == "skipped"
    assert set(Chunk.objects.filter(document=doc).values_list("pk", flat=True)) == ids
    # Saving with the same content does not even queue a task.
    doc.refresh_from_db()
    assert services.document_save(document=doc).status == Document.Status.READY
    assert services.document_ingest(document_id=doc.pk, force=True).result == "ready"
    assert Chunk.objects.filter(document=doc).count() == 2
    assert not ids & set(Chunk.objects.filter(document=doc).values_list("pk", flat=True))


def test_an_edit_replaces_the_chunks_and_a_delete_removes_them() -> None:
    doc = make()
    services.document_ingest(document_id=doc.pk)
    doc.text = (
        ARTICLE.replace("never expire", "expire after five years")
        + "\n## Lost cards\n\nA lost card can be replaced with the receipt.\n"
    )
    services.document_save(document=doc)
    doc.refresh_from_db()
    assert doc.version == 2 and doc.status == Document.Status.PENDING
    # Until the new content is ingested the old chunks keep serving.
    assert Chunk.objects.filter(document=doc, text__contains="never expire").exists()
    services.document_ingest(document_id=doc.pk)
    texts = list(
        Chunk.objects.filter(document=doc).order_by("position").values_list("text", flat=True)
    )
    assert len(texts) == 3 and not any("never expire" in t for t in texts)
    assert "five years" in texts[1]
    before = kb_version()
    services.document_delete(document_id=doc.pk)
    assert not Document.objects.filter(pk=doc.pk).exists()
    assert not Chunk.objects.filter(document_id=doc.pk).exists()
    assert kb_version() == before + 1


def test_a_task_for_an_outdated_version_leaves_the_newer_one_alone(monkeypatch: Any) -> None:
    doc = make()
    real = services.document_summarise

    def edit_meanwhile(**kwargs: Any) -> str:
        # A support admin saves an edit while the task is still embedding.
        edited = Document.objects.get(pk=doc.pk)
        edited.text = ARTICLE + "\n## New\n\nA new section.\n"
        services.document_save(document=edited)
        return real(**kwargs)

    monkeypatch.setattr(services, "document_summarise", edit_meanwhile)
    assert services.document_ingest(document_id=doc.pk).result == "stale"
    assert not Chunk.objects.filter(document=doc).exists()
    monkeypatch.setattr(services, "document_summarise", real)
    # The edit's own task then ingests the new content.
    assert services.document_ingest(document_id=doc.pk).result == "ready"
    assert Chunk.objects.filter(document=doc, text__contains="new section").exists()


def test_html_is_parsed_into_headed_sections_without_scripts() -> None:
    html = b"""<html><head><title>x</title><script>var secret = 1;</script></head><body>
    <h1>Boots</h1><p>Intro text about boots.</p><h2>Waterproof?</h2><p>They are water resistant.</p>
    <style>p {color: red}</style></body></html>"""
    sections = document_sections(data=html, source_format="html")
    anchors = [s.anchor for s in sections]
    assert anchors == ["boots", "waterproof"]
    assert all("secret" not in s.text and "color" not in s.text for s in sections)
    assert sections[1].heading == "Boots > Waterproof?"


def _pdf(text: str) -> bytes:
    """A minimal one-page PDF with one line of text (built by hand, valid xref)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    )
    return out


def test_uploaded_pdf_is_read_with_pypdf_and_cited_by_page(settings: Any, tmp_path: Any) -> None:
    settings.MEDIA_ROOT = str(tmp_path)
    doc = services.document_create(
        title="Warranty",
        language="en",
        file_name="warranty.pdf",
        file_bytes=_pdf("Every pair of boots has a two year warranty."),
    )
    assert doc.source_format == "pdf"
    services.document_ingest(document_id=doc.pk)
    chunk = Chunk.objects.get(document=doc)
    assert chunk.anchor == "p1" and "two year warranty" in chunk.text


def test_a_broken_pdf_fails_with_its_error_and_is_not_retried(settings: Any, tmp_path: Any) -> None:
    settings.MEDIA_ROOT = str(tmp_path)
    doc = services.document_create(
        title="Broken", language="en", file_name="broken.pdf", file_bytes=b"%PDF-1.4 garbage"
    )
    result = document_ingest_task.apply(args=[doc.pk]).get()
    doc.refresh_from_db()
    assert result == "failed" and doc.status == Document.Status.FAILED
    assert "PDF" in doc.error or "text" in doc.error
    assert not Chunk.objects.filter(document=doc).exists()


def test_chinese_text_is_split_at_chinese_sentence_ends(settings: Any) -> None:
    settings.TIERDESK_KB_CHUNK_TOKENS = 40
    settings.TIERDESK_KB_CHUNK_OVERLAP = 0
    text = "标准配送运费为8美元，3到5个工作日送达。" * 8
    drafts = sections_chunk(document_sections(data=text.encode(), source_format="text"))
    assert len(drafts) > 1
    assert all(d.text.endswith("。") for d in drafts[:-1])
    assert [d.anchor for d in drafts][:2] == ["s1#1", "s1#2"]


def test_empty_document_is_an_ingest_error() -> None:
    with pytest.raises(IngestError):
        document_sections(data=b"   \n  ", source_format="text")


@pytest.mark.models
def test_summary_comes_from_the_fast_model(settings: Any, model_files: None) -> None:
    settings.TIERDESK_KB_SUMMARY_ROLE = "fast"
    doc = make(ARTICLE + "\nGift cards can be bought online and in every store.\n")
    services.document_ingest(document_id=doc.pk)
    doc.refresh_from_db()
    words = doc.summary.split()
    assert 3 <= len(words) <= 50
    assert "gift" in doc.summary.lower()
    # Whatever the model wrote, only sentences the article entails were kept.
    from knowledge.entail import text_check

    assert text_check(doc.summary, [doc.text]).entailed, doc.summary


def test_the_sweeper_enqueues_again_only_ingestions_with_no_sign_of_life(
    django_capture_on_commit_callbacks: Any,
) -> None:
    """A broker that lost its queue leaves documents pending for ever; beat's sweep
    enqueues them again, and leaves alone the fresh, the ready and the failed."""
    from datetime import timedelta

    from django.utils import timezone

    lost = make()
    ready = make()
    services.document_ingest(document_id=ready.pk)
    fresh = make()
    failed = make()
    Document.objects.filter(pk=failed.pk).update(status=Document.Status.FAILED)
    an_hour_ago = timezone.now() - timedelta(hours=1)
    Document.objects.exclude(pk=fresh.pk).update(updated_at=an_hour_ago)

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        assert services.ingest_requeue_stale(older_than_s=900) == [lost.pk]
    assert len(callbacks) == 1  # one task, sent once the transaction commits
    # Touched: the next sweep waits a whole interval before trying it again.
    assert services.ingest_requeue_stale(older_than_s=900) == []
    # It is the same idempotent ingestion that runs.
    assert services.document_ingest(document_id=lost.pk).result == "ready"
    assert services.document_ingest(document_id=lost.pk).result == "skipped"


def test_an_upload_while_the_broker_is_down_is_saved_and_left_to_the_sweep(
    django_capture_on_commit_callbacks: Any, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    """The real kombu publish, pointed at a port where no Redis listens (a refused
    connection, as when Redis is down). The admin's save must not raise."""
    from config.celery import app
    from tests.net import free_port

    dead = f"redis://127.0.0.1:{free_port()}/0"
    publish = app.send_task  # what inference.jobs.task_enqueue calls

    def to_dead_broker(*args: Any, **kwargs: Any) -> Any:
        with app.connection_for_write(dead) as conn:
            return publish(*args, connection=conn, **kwargs)

    monkeypatch.setattr(app, "send_task", to_dead_broker)
    with django_capture_on_commit_callbacks(execute=True):
        doc = make()
    doc.refresh_from_db()
    assert doc.status == Document.Status.PENDING
    assert "stays pending until the sweep" in caplog.text
