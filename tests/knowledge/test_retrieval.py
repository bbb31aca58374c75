"""Hybrid retrieval over the really ingested demo articles: keywords, fusion, language,
relevance threshold, refresh on version change, the LlamaIndex vector store."""

from __future__ import annotations

from typing import Any

import pytest
from llama_index.core.vector_stores.types import VectorStoreQuery

from knowledge import embedding, index, services
from knowledge.retrieval import passages_retrieve
from knowledge.text import question_keywords

from .conftest import doc_id

pytestmark = pytest.mark.django_db


def titles(result: Any) -> list[str]:
    return [p.title for p in result.passages]


def test_question_becomes_intent_keywords() -> None:
    assert question_keywords("Hi! Could you please tell me how much gift wrapping costs?") == [
        "gift",
        "wrapping",
        "costs",
    ]
    assert question_keywords("请问靴子防水吗？") == ["靴子", "防水"]


@pytest.mark.parametrize(
    ("question", "language", "title", "anchor"),
    [
        ("what do you charge to gift wrap something?", "en", "Pricing FAQ", "gift-wrapping"),
        ("can I wear the boots in heavy rain?", "en", "Boots FAQ", "are-the-boots-waterproof"),
        ("what's the longest inseam you have for jeans?", "en", "Jeans FAQ", "how-long-is-the-leg"),
        ("升级快速配送要加多少钱？", "zh", "运费与配送时间", "升级为快速配送"),
        ("靴子有保修吗？", "zh", "夹克和靴子的保养", "靴子保修"),
    ],
)
def test_hybrid_finds_the_right_passage(
    kb: Any, question: str, language: str, title: str, anchor: str | None
) -> None:
    result = passages_retrieve(question=question, language=language)
    assert len(result.passages) == 3
    top = result.passages[0]
    assert top.title == title and top.relevant, result.explain()
    if anchor:
        assert anchor in [p.anchor for p in result.passages]
    assert result.index_size > 30 and result.timings_ms["total"] > 0


def test_each_method_can_run_alone(kb: Any) -> None:
    for method in ("dense", "bm25", "hybrid"):
        result = passages_retrieve(
            question="which sizes do the hiking boots come in", language="en", method=method
        )
        assert result.passages[0].title == "Boots FAQ", method
    with pytest.raises(ValueError):
        passages_retrieve(question="x", language="en", method="magic")


def test_nothing_relevant_for_an_off_topic_question(kb: Any) -> None:
    for question, language in (
        ("who won the football world cup?", "en"),
        ("明天北京天气怎么样？", "zh"),
    ):
        result = passages_retrieve(question=question, language=language)
        assert not result.relevant, result.explain()


def test_a_question_in_a_language_without_an_answer_falls_back_to_the_others(kb: Any) -> None:
    # No Chinese article covers gift wrapping; the English one does.
    result = passages_retrieve(question="gift wrapping 多少钱", language="zh")
    assert result.cross_language and result.passages[0].title == "Pricing FAQ"


def test_the_index_refreshes_when_the_knowledge_base_changes(kb: Any) -> None:
    question = "do you sell gloves made of alpaca wool?"
    assert not passages_retrieve(question=question, language="en").relevant
    doc = services.document_create(
        title="Gloves FAQ",
        language="en",
        source_format="markdown",
        text=(
            "# Gloves FAQ\n\n## Alpaca gloves\n\nOur winter gloves are knitted from alpaca wool.\n"
        ),
    )
    services.document_ingest(document_id=doc.pk)
    result = passages_retrieve(question=question, language="en")
    assert result.passages[0].title == "Gloves FAQ" and result.passages[0].relevant
    services.document_delete(document_id=doc.pk)
    assert "Gloves FAQ" not in titles(passages_retrieve(question=question, language="en"))
    # Unchanged documents were not re-read from the database.
    assert doc_id("en-boots-faq") in index.get_snapshot().documents


def test_snapshot_is_a_read_only_llamaindex_vector_store(kb: Any) -> None:
    store = index.SnapshotVectorStore(index.get_snapshot())
    vector = embedding.embed_query("are the boots waterproof")
    result = store.query(
        VectorStoreQuery(query_embedding=list(map(float, vector)), similarity_top_k=2)
    )
    assert result.nodes is not None and result.nodes[0].metadata["title"] == "Boots FAQ"
    assert result.similarities is not None and result.similarities[0] >= result.similarities[1]
    with pytest.raises(NotImplementedError):
        store.add([])


def test_empty_knowledge_base_returns_nothing(db: None) -> None:
    from knowledge.models import Document

    for pk in Document.objects.values_list("pk", flat=True):
        services.document_delete(document_id=pk)  # rolled back after the test
    result = passages_retrieve(question="are the boots waterproof", language="en")
    assert result.passages == [] and result.index_size == 0
