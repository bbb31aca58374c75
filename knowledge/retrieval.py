"""Hybrid retrieval: dense (MiniLM) + BM25 (jieba / stemmed), fused by reciprocal rank.

One call, ``passages_retrieve``, does everything from the question to the top passages:
the question becomes intent keywords (BM25 query) and an embedding (dense query); both
retrievers run over the question's language first; LlamaIndex's
``QueryFusionRetriever`` fuses them (reciprocal rank); each passage then gets the two
signals that decide whether it is relevant at all: its cosine similarity to the
question and the share of the question's keywords it contains.

It blocks (embedding, numpy, BM25): call it from a worker thread, never the event loop.
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any, cast

import numpy as np
from django.conf import settings
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.indices.vector_store.retrievers import VectorIndexRetriever
from llama_index.core.llms.mock import MockLLM
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters

from . import embedding, lexicon, multilingual
from . import text as ktext
from .article_links import article_url
from .index import IndexSnapshot, SnapshotVectorStore, get_snapshot

METHODS = ("dense", "bm25", "hybrid")


class MiniLMEmbedding(BaseEmbedding):
    """LlamaIndex's view of our process-wide embedder (loaded once, shared)."""

    model_name: str = "all-MiniLM-L6-v2"

    def _get_query_embedding(self, query: str) -> list[float]:
        return [float(x) for x in embedding.embed_query(query)]

    def _get_text_embedding(self, text: str) -> list[float]:
        return [float(x) for x in embedding.embed_texts([text])[0]]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in embedding.embed_texts(texts)]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embedding(text)


class JiebaBM25Retriever(BaseRetriever):
    """BM25 over the snapshot's terms; the query string is the keyword list."""

    def __init__(self, snapshot: IndexSnapshot, *, top_k: int, language: str | None) -> None:
        super().__init__()
        self._snapshot = snapshot
        self._top_k = top_k
        self._language = language
        self.scores: dict[str, float] = {}

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        snap = self._snapshot
        seg = snap.segment(self._language)
        if seg is None or seg.bm25 is None or not len(seg):
            return []
        vocab = seg.bm25.vocab_dict
        # The question's terms and the shop's other words for them (knowledge.lexicon).
        tokens = lexicon.expand_tokens(ktext.index_tokens(query_bundle.query_str))
        terms = [t for t in tokens if t in vocab]
        if not terms:
            return []
        k = min(self._top_k, len(seg))
        docs, scores = seg.bm25.retrieve([terms], k=k, show_progress=False, n_threads=0)
        out: list[NodeWithScore] = []
        for local, score in zip(docs[0], scores[0], strict=True):
            if score <= 0:
                continue
            node = snap.nodes[int(seg.rows[int(local)])]
            self.scores[node.node_id] = float(score)
            out.append(NodeWithScore(node=node, score=float(score)))
        return out


class MultilingualDenseRetriever(BaseRetriever):
    """Dense ranking of one language's segment by the multilingual embedder
    (``knowledge.multilingual``), for a language MiniLM doesn't read. It embeds the
    question as asked (e5 reads sentences), not the keyword list BM25 gets."""

    def __init__(self, snapshot: IndexSnapshot, *, top_k: int, language: str, question: str):
        super().__init__()
        self._snapshot = snapshot
        self._top_k = top_k
        self._language = language
        self._question = question

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        snap = self._snapshot
        seg = snap.segment(self._language)
        if seg is None or seg.ml_matrix is None or not len(seg):
            return []
        vector = multilingual.embed_query(self._question)
        return [
            NodeWithScore(node=snap.nodes[row], score=score)
            for row, score in snap.top(seg, seg.ml_matrix, vector, self._top_k)
        ]


class GeneratedQuestionRetriever(BaseRetriever):
    """Ranks sections by how close the question is to one of their generated questions
    (``knowledge.section_questions``): the best cosine, query to query, by the
    multilingual embedder. Each of a section's chunks gets the section's score."""

    def __init__(
        self,
        snapshot: IndexSnapshot,
        *,
        top_k: int,
        language: str | None,
        sims: dict[tuple[int, str], float],
    ) -> None:
        super().__init__()
        self._snapshot = snapshot
        self._top_k = top_k
        self._language = language
        self._sims = sims

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        snap = self._snapshot
        rows_of = section_rows(snap)
        lang = self._language
        scored: list[tuple[float, int]] = []
        # Only a close question that clearly leads votes: every question is somewhat
        # like every other to e5 (0.8 for unrelated ones, above 0.9 between short
        # Chinese questions on one topic), and a list of the merely least unlike would
        # push down a section whose questions are not written yet, or the one that
        # answers when another section's questions share its words. The lead is e5's
        # pointing lead (measured on the demo dev split).
        ranked = sorted(self._sims.items(), key=lambda item: item[1], reverse=True)
        floor = settings.TIERDESK_KB_QUESTIONS_MIN_RANK_SIMILARITY
        lead = settings.TIERDESK_KB_POINT_MIN_LEAD_MULTILINGUAL
        if not ranked or ranked[0][1] < floor:
            return []
        if len(ranked) > 1 and ranked[0][1] - ranked[1][1] < lead:
            return []
        for section, score in ranked[:1]:
            for row in rows_of.get(section, ()):
                row_language = str(snap.languages[row])
                if lang and (
                    row_language == lang[1:] if lang.startswith("!") else row_language != lang
                ):
                    continue
                scored.append((score, row))
        scored.sort(reverse=True)
        return [
            NodeWithScore(node=snap.nodes[row], score=score) for score, row in scored[: self._top_k]
        ]


def section_rows(snap: IndexSnapshot) -> dict[tuple[int, str], list[int]]:
    """The snapshot's rows by section, (document_id, section anchor): built once per
    snapshot."""
    cached = getattr(snap, "_section_rows", None)
    if cached is None:
        from .section_questions import section_anchor

        cached = {}
        for row, node in enumerate(snap.nodes):
            meta = node.metadata
            key = (int(meta["document_id"]), section_anchor(str(meta["anchor"])))
            cached.setdefault(key, []).append(row)
        snap._section_rows = cached  # type: ignore[attr-defined]
    return cast(dict[tuple[int, str], list[int]], cached)


def multilingual_ranked(snap: IndexSnapshot, language: str | None) -> bool:
    """Whether this language's own rows are ranked by the multilingual embedder."""
    if language is None or not multilingual.enabled_for(language):
        return False
    seg = snap.segment(language)
    return seg is not None and seg.ml_matrix is not None


@dataclass
class Passage:
    chunk_id: int
    document_id: int
    title: str
    anchor: str
    heading: str
    text: str
    language: str
    score: float  # the fused (or single-method) score that ranked it
    similarity: float  # cosine with the question
    coverage: float  # share of the question's keywords in the passage
    bm25: float | None
    relevant: bool
    # The best cosine between the question and one of the section's generated questions
    # (knowledge.section_questions); None when the section has none embedded.
    questions_similarity: float | None = None

    @property
    def material(self) -> str:
        """What the passage says, with the article title and section heading above it."""
        return f"{self.title} {self.heading} {self.text}"

    def citation(self, *, snippet_chars: int = 220) -> dict[str, Any]:
        snippet = " ".join(self.text.split())
        if len(snippet) > snippet_chars:
            snippet = snippet[: snippet_chars - 1].rstrip() + "…"
        return {
            "document_id": self.document_id,
            "chunk_id": self.chunk_id,
            "title": self.title,
            "anchor": self.anchor,
            "heading": self.heading.split(" > ")[-1] if self.heading else self.title,
            "url": article_url(self.document_id, self.anchor),
            "snippet": snippet,
            "score": round(self.score, 4),
        }


@dataclass
class RetrievalResult:
    question: str
    language: str
    keywords: list[str]
    method: str
    passages: list[Passage] = field(default_factory=list)
    # Whether passages come from another language (the question's had nothing relevant).
    cross_language: bool = False
    index_version: int = 0
    index_size: int = 0
    timings_ms: dict[str, float] = field(default_factory=dict)

    @property
    def relevant(self) -> list[Passage]:
        return [p for p in self.passages if p.relevant]

    def explain(self) -> dict[str, Any]:
        """What a support admin (and the reply's metadata) needs to see why."""
        return {
            "keywords": self.keywords,
            "method": self.method,
            "language": self.language,
            "cross_language": self.cross_language,
            "index_version": self.index_version,
            "passages": [
                {
                    k: (round(v, 4) if isinstance(v, float) else v)
                    for k, v in asdict(p).items()
                    if k not in ("text", "heading")
                }
                for p in self.passages
            ],
            "timings_ms": {k: round(v, 2) for k, v in self.timings_ms.items()},
        }


class WeightedFusionRetriever(QueryFusionRetriever):
    """LlamaIndex's fusion retriever, with its ``retriever_weights`` applied to the
    reciprocal-rank mode too (upstream uses them only for score-based modes).

    Why: all-MiniLM-L6-v2 is English-only. On Chinese questions its ranking is close to
    noise (dense hit@3 0.61 against BM25's 0.90 on our question set), and equal-weight
    fusion dragged Chinese hit@3 down to 0.80; weighting dense down there keeps it as
    a tie-breaker instead."""

    def __init__(
        self, retrievers: list[BaseRetriever], *, weights: list[float], similarity_top_k: int
    ) -> None:
        # Upstream's __init__ resolves the LLM through resolve_llm(), which retries
        # optional imports (langchain, openai) on every call: ~10 ms per search here.
        # With num_queries=1 no LLM is ever called, so set the fields directly.
        self.num_queries = 1
        self.query_gen_prompt = ""
        self.similarity_top_k = similarity_top_k
        self.mode = FUSION_MODES.RECIPROCAL_RANK
        self.use_async = False
        self._retrievers = retrievers
        total = sum(weights)
        self._retriever_weights = [w / total for w in weights]
        self._llm = _llm
        BaseRetriever.__init__(self, verbose=False)

    def _reciprocal_rerank_fusion(
        self, results: dict[tuple[str, int], list[NodeWithScore]]
    ) -> list[NodeWithScore]:
        k = 60.0
        fused: dict[str, float] = {}
        by_hash: dict[str, NodeWithScore] = {}
        for (_query, index), items in results.items():
            weight = self._retriever_weights[index] * len(self._retrievers)
            ranked = sorted(items, key=lambda x: x.score or 0.0, reverse=True)
            for rank, item in enumerate(ranked):
                key = item.node.node_id
                by_hash.setdefault(key, item)
                fused[key] = fused.get(key, 0.0) + weight / (rank + k)
        out: list[NodeWithScore] = []
        for key, score in sorted(fused.items(), key=lambda kv: kv[1], reverse=True):
            item = by_hash[key]
            out.append(NodeWithScore(node=item.node, score=score))
        return out


def dense_trusted(language: str | None) -> bool:
    """Whether the embedding model understands this language (a setting, because the
    model is one: a multilingual model would list "zh" too)."""
    return language is None or language in settings.TIERDESK_KB_DENSE_LANGUAGES


_embed_model: MiniLMEmbedding | None = None
_llm = MockLLM()  # the fusion retriever wants one; with num_queries=1 it is never called


_index_lock = threading.Lock()


def _vector_index(snap: IndexSnapshot) -> Any:
    """LlamaIndex's VectorStoreIndex over the snapshot's store, built once per snapshot."""
    cached = getattr(snap, "_llama_index", None)
    if cached is None:
        from llama_index.core import VectorStoreIndex

        with _index_lock:
            cached = getattr(snap, "_llama_index", None)
            if cached is None:
                cached = VectorStoreIndex.from_vector_store(
                    SnapshotVectorStore(snap), embed_model=_embedder()
                )
                snap._llama_index = cached  # type: ignore[attr-defined]
    return cached


def _embedder() -> MiniLMEmbedding:
    global _embed_model
    if _embed_model is None:
        _embed_model = MiniLMEmbedding()
    return _embed_model


def _run(
    snap: IndexSnapshot,
    *,
    bundle: QueryBundle,
    question: str,
    language: str | None,
    method: str,
    top_k: int,
    candidates: int,
    sims: dict[tuple[int, str], float] | None = None,
) -> tuple[list[NodeWithScore], dict[str, float]]:
    filters = (
        MetadataFilters(filters=[MetadataFilter(key="language", value=language)])
        if language
        else None
    )
    ml = multilingual_ranked(snap, language)
    dense: BaseRetriever
    if ml and language is not None:
        # e5 reads this language: it ranks at full weight where MiniLM weighed 0.1.
        dense = MultilingualDenseRetriever(
            snap, top_k=candidates, language=language, question=question
        )
    else:
        dense = VectorIndexRetriever(
            index=_vector_index(snap), similarity_top_k=candidates, filters=filters
        )
    bm25 = JiebaBM25Retriever(snap, top_k=candidates, language=language)
    if method == "dense":
        return dense.retrieve(bundle)[:top_k], bm25.scores
    if method == "bm25":
        return bm25.retrieve(bundle)[:top_k], bm25.scores
    if language and language.startswith("!"):
        # The other languages' rows: dense is trusted if it understands all of them.
        searched = {str(x) for x in np.unique(snap.languages)} - {language[1:]}
        trusted = all(dense_trusted(x) for x in searched)
    else:
        trusted = ml or dense_trusted(language)
    dense_weight = 1.0 if trusted else settings.TIERDESK_KB_DENSE_WEIGHT_OTHER
    retrievers: list[BaseRetriever] = [dense, bm25]
    weights = [dense_weight, 1.0]
    if sims:
        # The section's generated questions, beside its text: a shopper's wording the
        # article doesn't use is often one of them.
        retrievers.append(
            GeneratedQuestionRetriever(snap, top_k=candidates, language=language, sims=sims)
        )
        weights.append(settings.TIERDESK_KB_QUESTIONS_WEIGHT)
    # One query (no LLM rewriting: the keywords are the rewrite), reciprocal rank.
    fusion = WeightedFusionRetriever(retrievers, weights=weights, similarity_top_k=top_k)
    return fusion.retrieve(bundle), bm25.scores


def passages_retrieve(
    *,
    question: str,
    language: str,
    method: str = "hybrid",
    top_k: int | None = None,
    snapshot: IndexSnapshot | None = None,
) -> RetrievalResult:
    """The top passages for a question, each marked relevant or not."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}")
    top_k = top_k or settings.TIERDESK_KB_TOP_K
    candidates = max(settings.TIERDESK_KB_CANDIDATES, top_k)
    timings: dict[str, float] = {}
    started = time.perf_counter()
    snap = snapshot or get_snapshot()
    timings["index"] = (time.perf_counter() - started) * 1000
    keywords = ktext.question_keywords(question)
    result = RetrievalResult(
        question=question,
        language=language,
        keywords=keywords,
        method=method,
        index_version=snap.version,
        index_size=len(snap),
    )
    if not len(snap):
        return result
    t = time.perf_counter()
    vector = embedding.embed_query(question)
    timings["embed"] = (time.perf_counter() - t) * 1000
    bundle = QueryBundle(query_str=" ".join(keywords), embedding=[float(x) for x in vector])
    t = time.perf_counter()
    sims = _questions_similarity(question) if method == "hybrid" else {}
    timings["questions"] = (time.perf_counter() - t) * 1000

    t = time.perf_counter()
    # The question's own language first; the others only if it has nothing relevant
    # (a Chinese question about a topic only an English article covers). The retry
    # searches only the other languages' rows ("!zh"): the own ones were just searched.
    languages: list[str | None] = []
    if snap.has_language(language):
        languages = [language]
        if snap.segment(f"!{language}") is not None:
            languages.append(f"!{language}")
    else:
        languages = [None]
    for attempt, lang in enumerate(languages):
        nodes, bm25_scores = _run(
            snap,
            bundle=bundle,
            question=question,
            language=lang,
            method=method,
            top_k=top_k,
            candidates=candidates,
            sims=sims,
        )
        passages = [
            _passage(snap, item, vector=vector, keywords=keywords, bm25=bm25_scores, sims=sims)
            for item in nodes
        ]
        if attempt == 0:
            # Nothing relevant anywhere: the own language's closest passages are shown
            # (admin "try a question", evaluation ranks); the answer is "don't know".
            result.passages = passages
        if any(p.relevant for p in passages):
            result.passages = passages
            result.cross_language = attempt > 0
            break
    timings["search"] = (time.perf_counter() - t) * 1000
    timings["total"] = (time.perf_counter() - started) * 1000
    result.timings_ms = timings
    return result


def _passage(
    snap: IndexSnapshot,
    item: NodeWithScore,
    *,
    vector: np.ndarray,
    keywords: list[str],
    bm25: dict[str, float],
    sims: dict[tuple[int, str], float] | None = None,
) -> Passage:
    node = item.node
    row = snap.row_of[node.node_id]
    similarity = float(snap.matrix[row] @ vector)
    meta_text = f"{node.metadata.get('title', '')} {node.metadata.get('heading', '')} "
    coverage = lexicon.keyword_coverage(
        keywords, meta_text + node.get_content(), snap.token_sets[row]
    )
    meta = node.metadata
    language = str(meta["language"])
    # Similarity only vouches for relevance in languages the embedder understands;
    # MiniLM scores any two Chinese texts ~0.6 because they share characters.
    if dense_trusted(language):
        relevant = (
            similarity >= settings.TIERDESK_KB_MIN_SIMILARITY
            or coverage >= settings.TIERDESK_KB_MIN_KEYWORD_COVERAGE
        )
    else:
        # Keywords are the only evidence here, so they get a slightly lower bar.
        relevant = coverage >= settings.TIERDESK_KB_MIN_KEYWORD_COVERAGE_OTHER
    from .section_questions import section_anchor

    asked = (sims or {}).get((int(meta["document_id"]), section_anchor(str(meta["anchor"]))))
    # A question the section's generated questions ask in other words: relevant, and
    # still only answered if the coverage and entailment gates agree.
    if asked is not None and asked >= settings.TIERDESK_KB_QUESTIONS_MIN_SIMILARITY:
        relevant = True
    return Passage(
        chunk_id=int(node.node_id) if node.node_id.isdigit() else row,
        document_id=int(meta["document_id"]),
        title=str(meta["title"]),
        anchor=str(meta["anchor"]),
        heading=str(meta.get("heading", "")),
        text=node.get_content(),
        language=language,
        score=float(item.score or 0.0),
        similarity=similarity,
        coverage=coverage,
        bm25=bm25.get(node.node_id),
        relevant=relevant,
        questions_similarity=asked,
    )


def _questions_similarity(question: str) -> dict[tuple[int, str], float]:
    """Each section's best similarity to the question through its generated questions."""
    from .section_questions import section_similarity

    return section_similarity(question)
