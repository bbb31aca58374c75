"""Exact-match response cache (docs/product.md, prompt hygiene).

The key is a sha256 over the normalised prompt (NFKC, whitespace collapsed, each chat
message with its role), the model id, the model's version (the GGUF file's sha256 for
local models, ``model_version`` for remote ones) and the sampling parameters. A new
model file therefore never sees an old entry: changing the model invalidates the cache
without a flush.

What is never cached: replies that use a shopper's personal data (the dialogue marks
them ``personal``) and prompts that carry an order id, an email address or a phone
number; requests made with the no-cache switch (``TIERDESK_RESPONSE_CACHE=false``
globally, or ``no_cache=True`` per call); streams that did not finish normally.

Entries live in Redis (shared by every process) when ``TIERDESK_STATE_REDIS_URL`` is
set, else in a bounded in-process LRU. A Redis outage makes the cache a miss, never an
error.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import threading
import time
import unicodedata
from collections import OrderedDict
from typing import Any

from django.conf import settings

from . import state
from .base import GenerationRequest

_SPACES = re.compile(r"\s+")
# Personal data in a prompt: an order id, an email address, a phone number.
_PERSONAL = re.compile(
    r"#?\b[Ww]\d{7}\b|[\w.+-]+@[\w-]+\.[\w.-]+|\+?\d[\d\s().-]{7,}\d",
)
_LOCAL_MAX = 2048

_local: OrderedDict[str, tuple[float, str]] = OrderedDict()
_local_lock = threading.Lock()


def normalise(text: str) -> str:
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", text)).strip()


def cache_key(*, request: GenerationRequest, model_id: str, model_version: str) -> str:
    if request.messages is not None:
        prompt: Any = [[m.role, normalise(m.content)] for m in request.messages]
    else:
        prompt = normalise(request.prompt or "")
    material = json.dumps(
        {
            "prompt": prompt,
            "model": model_id,
            "version": model_version,
            "sampling": request.sampling_key(),
        },
        ensure_ascii=False,
        sort_keys=True,
    )
    return state.key("rcache", hashlib.sha256(material.encode()).hexdigest())


def has_personal_data(request: GenerationRequest) -> bool:
    if request.messages is not None:
        texts = [m.content for m in request.messages if m.role != "system"]
    else:
        texts = [request.prompt or ""]
    return any(_PERSONAL.search(t) for t in texts)


def cacheable(*, request: GenerationRequest, personal: bool, no_cache: bool = False) -> bool:
    return bool(
        settings.TIERDESK_RESPONSE_CACHE
        and not no_cache
        and not personal
        and not has_personal_data(request)
    )


async def cache_get(key: str) -> str | None:
    if state.shared():
        try:
            raw = await state.run(lambda r: r.get(key))
        except state.RedisUnavailable:
            return None
        return raw.decode() if raw is not None else None
    with _local_lock:
        hit = _local.get(key)
        if hit is None:
            return None
        expires, text = hit
        if expires < time.monotonic():
            _local.pop(key, None)
            return None
        _local.move_to_end(key)
        return text


async def cache_set(key: str, text: str) -> None:
    ttl = int(settings.TIERDESK_RESPONSE_CACHE_TTL_S)
    if state.shared():
        with contextlib.suppress(state.RedisUnavailable):
            await state.run(lambda r: r.set(key, text.encode(), ex=ttl))
        return
    with _local_lock:
        _local[key] = (time.monotonic() + ttl, text)
        _local.move_to_end(key)
        while len(_local) > _LOCAL_MAX:
            _local.popitem(last=False)


def cache_clear_local() -> None:
    with _local_lock:
        _local.clear()
