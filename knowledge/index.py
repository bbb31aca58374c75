"""The in-process search index, built from the database, refreshed on version change.

Each process holds one immutable ``IndexSnapshot``: a matrix of chunk embeddings, a
BM25 index over jieba/stemmed terms, and a LlamaIndex ``TextNode`` per chunk. When
``KnowledgeBaseVersion`` moves (checked at most every ``TIERDESK_KB_REFRESH_S``: the one
refresh scheme of inference/versioned.py), the next search rebuilds the snapshot;
per-document pieces are cached by (document, ingested version) so only changed
documents are read again. Searches that are already running keep the snapshot they
started with; while one thread rebuilds, the others keep searching the previous one.

To LlamaIndex the snapshot is a vector store (``SnapshotVectorStore``), so retrieval
composes with its retrievers and the fusion retriever (``knowledge.retrieval``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
from django.conf import settings
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryResult,
)
from pydantic import PrivateAttr

from inference.versioned import VersionedCache, VersionSource

from . import text as ktext

logger = logging.getLogger(__name__)


@dataclass
class DocPart:
    """One document's contribution to the index (cached across rebuilds)."""

    document_id: int
    ingested_version: int
    title: str
    language: str
    summary: str
    summary_vector: np.ndarray | None
    nodes: list[TextNode]
    vectors: np.ndarray
    tokens: list[list[str]]
    # The multilingual embedder's rows (knowledge/multilingual.py), or None when the
    # document's language doesn't get them or it was ingested before they existed.
    ml_vectors: np.ndarray | None = None


def _dense_build(matrix: np.ndarray) -> Any:
    """Half precision for the search matrix, as a torch tensor.

    Why: a search is a matrix-vector product over every row, bound by memory bandwidth.
    Measured here at 70k x 384: numpy float32 5.9 ms, torch float16 3.0 ms, and
    ``torch.topk`` 0.12 ms against ``np.argpartition`` 1.0 ms. float16 keeps about three
    decimal digits of a cosine, enough to rank; the relevance threshold is checked on
    the float32 matrix (``IndexSnapshot.matrix``)."""
    import torch

    return torch.from_numpy(np.ascontiguousarray(matrix, dtype=np.float16))


def _bm25_build(tokens: list[list[str]]) -> Any:
    import bm25s

    bm25 = bm25s.BM25()
    # An empty token list breaks bm25s; a placeholder term matches nothing real.
    bm25.index([t or ["\x00"] for t in tokens], show_progress=False)
    return bm25


@dataclass
class Segment:
    """The rows of one language (or of all languages), searchable on their own.

    Why: a language filter applied as a mask still scores every row. At 100k chunks
    that was most of a search (dense matmul, BM25 scoring and top-k over all rows);
    a per-language segment only touches its own rows."""

    rows: np.ndarray  # global row numbers, ascending
    matrix: Any  # those rows' embeddings: a contiguous float16 torch tensor
    bm25: Any  # bm25s index over those rows' terms (None when they have none)
    # Those rows by the multilingual embedder (float16 tensor), for a language it is
    # configured for and only when every row has its vector; None: MiniLM ranks.
    ml_matrix: Any = None

    def __len__(self) -> int:
        return len(self.rows)


@dataclass
class IndexSnapshot:
    version: int
    nodes: list[TextNode] = field(default_factory=list)
    matrix: np.ndarray = field(default_factory=lambda: np.zeros((0, 384), dtype=np.float32))
    languages: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype="<U4"))
    token_sets: list[frozenset[str]] = field(default_factory=list)
    documents: dict[int, DocPart] = field(default_factory=dict)
    row_of: dict[str, int] = field(default_factory=dict)
    segments: dict[str, Segment] = field(default_factory=dict)  # "" = all languages
    built_ms: float = 0.0
    stamp: str = ""

    def __len__(self) -> int:
        return len(self.nodes)

    def top(self, seg: Segment, matrix: Any, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The ``k`` rows of ``seg`` whose rows of ``matrix`` (the segment's own, MiniLM's
        or the multilingual one) score highest against ``vector``: (global row, score)."""
        import torch

        query = torch.from_numpy(np.asarray(vector, dtype=np.float16))
        values, top = torch.topk(torch.mv(matrix, query), min(k, len(seg)))
        return [
            (int(seg.rows[i]), float(v)) for v, i in zip(values.tolist(), top.tolist(), strict=True)
        ]

    def segment(self, language: str | None) -> Segment | None:
        """The searchable rows for ``language`` (None or "" = every language, "!en" =
        every language but English)."""
        return self.segments.get(language or "")

    def has_language(self, language: str) -> bool:
        seg = self.segments.get(language) if language else None
        return bool(seg is not None and len(seg))


def node_for(
    *,
    chunk_id: int | str,
    document_id: int,
    title: str,
    language: str,
    anchor: str,
    heading: str,
    text: str,
) -> TextNode:
    return TextNode(
        id_=str(chunk_id),
        text=text,
        metadata={
            "document_id": document_id,
            "title": title,
            "language": language,
            "anchor": anchor,
            "heading": heading,
        },
    )


def snapshot_build(parts: list[DocPart], *, version: int, dim: int = 384) -> IndexSnapshot:
    """Assemble a snapshot from per-document parts (also used by the benchmark)."""
    started = time.perf_counter()
    nodes: list[TextNode] = []
    vectors: list[np.ndarray] = []
    languages: list[str] = []
    tokens: list[list[str]] = []
    for part in parts:
        nodes.extend(part.nodes)
        vectors.append(part.vectors)
        languages.extend([part.language] * len(part.nodes))
        tokens.extend(part.tokens)
    matrix = (
        np.ascontiguousarray(np.vstack(vectors), dtype=np.float32)
        if vectors
        else np.zeros((0, dim), dtype=np.float32)
    )
    language_of = np.array(languages, dtype="<U4")
    segments: dict[str, Segment] = {}
    if tokens:
        everything = np.arange(len(nodes))
        segments[""] = Segment(everything, _dense_build(matrix), _bm25_build(tokens))
        present = sorted(set(languages))

        def segment_of(rows: np.ndarray) -> Segment:
            if len(rows) == len(nodes):
                return segments[""]  # every row: share, don't copy
            return Segment(rows, _dense_build(matrix[rows]), _bm25_build([tokens[i] for i in rows]))

        for language in present:
            segments[language] = segment_of(np.flatnonzero(language_of == language))
        _multilingual_attach(parts, segments)
        # "!en": every other language, for the cross-language retry. With two
        # languages it is simply the other one's segment.
        for language in present:
            others = [o for o in present if o != language]
            if len(others) == 1:
                segments[f"!{language}"] = segments[others[0]]
            elif others:
                segments[f"!{language}"] = segment_of(np.flatnonzero(language_of != language))
    snapshot = IndexSnapshot(
        version=version,
        nodes=nodes,
        matrix=matrix,
        languages=language_of,
        token_sets=[frozenset(t) for t in tokens],
        documents={p.document_id: p for p in parts},
        row_of={n.node_id: i for i, n in enumerate(nodes)},
        segments=segments,
    )
    snapshot.built_ms = (time.perf_counter() - started) * 1000
    return snapshot


def _multilingual_attach(parts: list[DocPart], segments: dict[str, Segment]) -> None:
    """Give each language's own segment its multilingual matrix, when all its documents
    have one (a mixed segment would rank only some rows by e5: then MiniLM ranks all)."""
    by_language: dict[str, list[DocPart]] = {}
    for part in parts:
        if part.nodes:
            by_language.setdefault(part.language, []).append(part)
    for language, own in by_language.items():
        seg = segments.get(language)
        if seg is None or any(p.ml_vectors is None for p in own):
            continue
        # The segment's rows are ascending global rows, and parts are laid out in
        # order, so the parts' rows stacked in order line up with them.
        stacked = np.vstack([p.ml_vectors for p in own if p.ml_vectors is not None])
        if len(stacked) == len(seg.rows):
            seg.ml_matrix = _dense_build(stacked)


# -- the per-process index ---------------------------------------------------------------------
_parts: dict[int, DocPart] = {}


def _db_version() -> tuple[int, str]:
    """The version and its timestamp: a counter alone can repeat after a rolled-back
    transaction (tests) or a restored backup, and then a stale index would look current."""
    from .models import KnowledgeBaseVersion

    row = KnowledgeBaseVersion.objects.filter(pk=1).values_list("version", "updated_at").first()
    if row is None:
        return 0, ""
    return int(row[0]), row[1].isoformat() if row[1] else ""


# The one refresh scheme (inference/versioned.py): the KnowledgeBaseVersion row, bumped
# by knowledge.services in the transaction that changes the chunks.
KB_VERSION = VersionSource(
    name="knowledge base",
    read=lambda: _db_version(),
    check_interval_s=lambda: settings.TIERDESK_KB_REFRESH_S,
)


def _load_part(document: Any) -> DocPart:
    from .embedding import from_bytes
    from .models import Chunk

    rows = list(
        Chunk.objects.filter(document_id=document.pk)
        .order_by("position")
        .values_list("pk", "anchor", "heading", "text", "embedding", "embedding_multilingual")
    )
    nodes = [
        node_for(
            chunk_id=pk,
            document_id=document.pk,
            title=document.title,
            language=document.language,
            anchor=anchor,
            heading=heading,
            text=text,
        )
        for pk, anchor, heading, text, _, _ in rows
    ]
    vectors = (
        np.vstack([np.frombuffer(bytes(e), dtype="<f4") for *_, e, _ in rows])
        if rows
        else np.zeros((0, 384), dtype=np.float32)
    )
    tokens = [
        ktext.index_tokens(f"{document.title} {heading} {text}")
        for _, _, heading, text, _, _ in rows
    ]
    others = [bytes(e) for *_, e in rows if e]
    ml_vectors = (
        np.vstack([np.frombuffer(e, dtype="<f4") for e in others])
        if others and len(others) == len(rows)
        else None
    )
    return DocPart(
        document_id=document.pk,
        ingested_version=document.ingested_version,
        title=document.title,
        language=document.language,
        summary=document.summary,
        summary_vector=from_bytes(document.summary_embedding),
        nodes=nodes,
        vectors=vectors,
        tokens=tokens,
        ml_vectors=ml_vectors,
    )


def _rebuild(version: int) -> IndexSnapshot:
    from .models import Document

    documents = list(
        Document.objects.filter(chunk_count__gt=0)
        .exclude(ingested_hash="")
        .only("pk", "title", "language", "summary", "summary_embedding", "ingested_version")
    )
    parts: list[DocPart] = []
    for document in documents:
        cached = _parts.get(document.pk)
        if (
            cached is None
            or cached.ingested_version != document.ingested_version
            or cached.title != document.title
        ):
            cached = _load_part(document)
            _parts[document.pk] = cached
        parts.append(cached)
    live = {d.pk for d in documents}
    for stale in set(_parts) - live:
        _parts.pop(stale, None)
    snapshot = snapshot_build(parts, version=version)
    logger.info(
        "knowledge index v%d: %d chunks from %d documents in %.0f ms",
        version,
        len(snapshot),
        len(parts),
        snapshot.built_ms,
    )
    return snapshot


def _snapshot_build(previous: IndexSnapshot | None, key: Hashable) -> IndexSnapshot:
    version, stamp = cast(tuple[int, str], key)
    snapshot = _rebuild(version)
    snapshot.stamp = stamp
    return snapshot


_cache: VersionedCache[IndexSnapshot] = VersionedCache(
    name="knowledge index", source=KB_VERSION, build=_snapshot_build
)


def get_snapshot(*, force_check: bool = False) -> IndexSnapshot:
    """The current snapshot; blocks (database + CPU): never call on the event loop."""
    return _cache.get(force_check=force_check)


def reset() -> None:
    """Forget the snapshot and cached parts (tests, after swapping the database)."""
    _cache.reset()
    _parts.clear()


def install(snapshot: IndexSnapshot) -> None:
    """Serve a prepared snapshot (the benchmark's synthetic index) until the next
    version check finds the database elsewhere; pair with a large refresh interval."""
    _cache.install(snapshot, key=(snapshot.version, snapshot.stamp))


# -- LlamaIndex vector store ---------------------------------------------------------------------
class SnapshotVectorStore(BasePydanticVectorStore):
    """A read-only LlamaIndex vector store over one snapshot's embedding matrix.

    Writes go through ``knowledge.services`` (the database is the system of record), so
    ``add`` and ``delete`` refuse. Filters: ``language`` (exact match) only."""

    stores_text: bool = True
    is_embedding_query: bool = True
    _snapshot: IndexSnapshot = PrivateAttr()

    def __init__(self, snapshot: IndexSnapshot, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._snapshot = snapshot

    @property
    def client(self) -> Any:
        return None

    def add(self, nodes: Any, **kwargs: Any) -> list[str]:
        raise NotImplementedError("ingest documents through knowledge.services")

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        raise NotImplementedError("delete documents through knowledge.services")

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        snap = self._snapshot
        seg = snap.segment(_language_filter(query.filters))
        k = min(int(query.similarity_top_k or 1), len(seg) if seg is not None else 0)
        if seg is None or k == 0 or query.query_embedding is None:
            return VectorStoreQueryResult(nodes=[], similarities=[], ids=[])
        hits = snap.top(seg, seg.matrix, np.asarray(query.query_embedding), k)
        return VectorStoreQueryResult(
            nodes=[snap.nodes[r] for r, _ in hits],
            similarities=[score for _, score in hits],
            ids=[snap.nodes[r].node_id for r, _ in hits],
        )


def _language_filter(filters: MetadataFilters | None) -> str | None:
    if not filters:
        return None
    for item in filters.filters:
        if getattr(item, "key", None) == "language":
            return str(getattr(item, "value", "")) or None
    return None
