"""Sentence embeddings of the classifier's (and the handoff scorer's) example texts,
cached in this process and on disk, so that a retrain embeds only new examples."""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

import numpy as np
from django.conf import settings

from routing.classifier import embedding_applies

logger = logging.getLogger(__name__)

# Example texts -> their sentence embedding, kept across retrains in this process (the
# Celery worker): adding one example re-embeds one text, not the shop's thousands.
# 50k vectors of 384 float32 are about 77 MB at most.
_EXAMPLE_CACHE_SIZE = 50_000
example_cache: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_example_lock = threading.Lock()


def examples_embed(
    texts: list[str],
    report: Callable[[str, float], None] | None = None,
    share: tuple[float, float] = (0.0, 1.0),
) -> np.ndarray:
    """Sentence embeddings of example texts (one row each), embedding only the texts
    this process has not embedded before."""
    from knowledge.embedding import dimension, embed_texts, model_path

    model = model_path()
    keys = [(model, t.strip()) for t in texts]
    zero = np.zeros(dimension(), dtype=np.float32)
    with _example_lock:
        for key in dict.fromkeys(keys):
            if key not in example_cache and not embedding_applies(key[1]):
                example_cache[key] = zero  # see embedding_applies
        missing = list(dict.fromkeys(k for k in keys if k not in example_cache))
    if missing:
        on_disk = _disk_cache_read(model, [text for _, text in missing])
        if on_disk:
            examples_cache_fill(list(on_disk.items()))
            missing = [k for k in missing if k[1] not in on_disk]
    embedded: list[tuple[str, np.ndarray]] = []
    batch = 256
    for start in range(0, len(missing), batch):
        if report is not None:
            low, high = share
            report(
                f"embedding examples {start}/{len(missing)}",
                low + (high - low) * start / len(missing),
            )
        chunk = missing[start : start + batch]
        vectors = embed_texts([text for _, text in chunk])
        embedded.extend((text, vector) for (_, text), vector in zip(chunk, vectors, strict=True))
        with _example_lock:
            for key, vector in zip(chunk, vectors, strict=True):
                example_cache[key] = vector
            while len(example_cache) > _EXAMPLE_CACHE_SIZE:
                example_cache.popitem(last=False)
    if embedded:
        _disk_cache_add(model, embedded)
    with _example_lock:
        rows = []
        for key in keys:
            vector = example_cache.get(key)
            if vector is None:  # evicted meanwhile (more texts than the cache holds)
                vector = embed_texts([key[1]])[0] if embedding_applies(key[1]) else zero
            rows.append(vector)
    return np.vstack(rows) if rows else np.zeros((0, len(zero)), dtype=np.float32)


# The example embeddings on disk too (var/cache), keyed by the model and a hash of the
# text: a new worker process (a deploy, a restart) retrains without embedding the
# shop's examples again. With the seed data, the embedding was ~50 of the ~70 s a
# first training took on a loaded 2-core machine (bench/results/router.json).
_disk_lock = threading.Lock()


def _disk_cache_path(model: str) -> Path:
    name = hashlib.sha256(model.encode()).hexdigest()[:16]
    return Path(settings.VAR_DIR) / "cache" / f"router-example-embeddings-{name}.npz"


def _text_key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _disk_cache_load(path: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as data:
            return dict(zip(data["keys"].tolist(), data["vectors"], strict=True))
    except FileNotFoundError:
        return {}
    except Exception:
        # Only a cache: a damaged file costs the embedding time, nothing else.
        logger.warning("unreadable example-embedding cache %s; ignored", path, exc_info=True)
        return {}


def _disk_cache_read(model: str, texts: list[str]) -> dict[str, np.ndarray]:
    """text -> embedding for the texts the disk cache has."""
    with _disk_lock:
        stored = _disk_cache_load(_disk_cache_path(model))
    found = {}
    for text in texts:
        vector = stored.get(_text_key(text))
        if vector is not None:
            found[text] = vector
    return found


def _disk_cache_add(model: str, pairs: list[tuple[str, np.ndarray]]) -> None:
    """Add embeddings to the disk cache (written whole to a temporary file and
    renamed, so a reader never sees half a file; at most _EXAMPLE_CACHE_SIZE rows,
    the newest kept)."""
    path = _disk_cache_path(model)
    try:
        with _disk_lock:
            stored = _disk_cache_load(path)
            for text, vector in pairs:
                stored.pop(_text_key(text), None)
                stored[_text_key(text)] = np.asarray(vector, dtype=np.float32)
            keys = list(stored)[-_EXAMPLE_CACHE_SIZE:]
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npz")
            np.savez(partial, keys=np.array(keys), vectors=np.vstack([stored[k] for k in keys]))
            os.replace(partial, path)
    except OSError:
        logger.warning("could not write the example-embedding cache %s", path, exc_info=True)


def examples_cache_fill(pairs: list[tuple[str, np.ndarray]]) -> None:
    """Put known (text, embedding) pairs in the example cache (an evaluation's saved
    embeddings of the same model)."""
    from knowledge.embedding import model_path

    model = model_path()
    with _example_lock:
        for text, vector in pairs:
            example_cache[(model, text.strip())] = np.asarray(vector, dtype=np.float32)
        while len(example_cache) > _EXAMPLE_CACHE_SIZE:
            example_cache.popitem(last=False)
