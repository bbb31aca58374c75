"""Bridge blocking backends onto the event loop without blocking it.

Inference runs in a dedicated thread pool (not asgiref's default one, which the
database helpers use, so a slow model can't starve database work). Chunks come back
through an ``asyncio.Queue``; leaving the ``async for`` early cancels generation.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .base import GenerationChunk, GenerationRequest, ModelBackend

_executor = ThreadPoolExecutor(max_workers=64, thread_name_prefix="inference")
_END = object()


async def run_blocking(func: Any, *args: Any) -> Any:
    """Run CPU-bound work (parsing, embedding, classifying) off the event loop."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_executor, func, *args)


async def astream(
    backend: ModelBackend, request: GenerationRequest
) -> AsyncIterator[GenerationChunk]:
    loop = asyncio.get_running_loop()
    out: asyncio.Queue[Any] = asyncio.Queue()
    stop = threading.Event()

    def deliver(item: Any) -> None:
        try:
            loop.call_soon_threadsafe(out.put_nowait, item)
        except RuntimeError:  # loop already closed: the consumer is gone
            stop.set()

    def pump() -> None:
        gen = backend.stream(request)
        try:
            for chunk in gen:
                deliver(chunk)
                if stop.is_set():
                    break
        except BaseException as exc:
            deliver(exc)
        finally:
            close = getattr(gen, "close", None)
            if close is not None:
                close()  # cancels generation in the engine
            deliver(_END)

    loop.run_in_executor(_executor, pump)
    try:
        while True:
            item = await out.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
