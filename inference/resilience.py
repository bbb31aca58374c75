"""Every model call of a turn goes through ``model_stream`` (docs/resilience.md).

In order:

1. **Hygiene**: shopper text in chat messages is sanitized (``prompt_sanitize``),
   control and format characters are stripped from completion prompts, and the
   system message gets the canary note (``prompts.canary_note``).
2. **Priority queue**: the turn waits for one of the role's model slots
   (``inference.queue.model_slot``, VIP weight 3 against 1).
3. **Response cache**: an exact-match hit streams the stored reply; personal data and
   the no-cache switch bypass it (``inference.cache``).
4. **The large tier** (``large_stream``), when the role is ``large`` and it is not
   just an alias of the fallback model:
   - the session's token budget is tripped: the fallback answers (``session_budget``);
   - the prompt's token pre-count is over ``TIERDESK_L3_MAX_PROMPT_TOKENS``:
     the fallback answers (``prompt_too_long``);
   - the shared upstream breaker is open: the fallback answers at once
     (``breaker_open``);
   - no first token within ``TIERDESK_L3_FIRST_TOKEN_TIMEOUT_MS`` (500 ms): the
     upstream request is cancelled and the fallback answers in the same stream
     (``timeout``). So that the fallback's first token is not a whole prefill late,
     the fallback starts speculatively (hedged) after ``TIERDESK_L3_HEDGE_MS`` without
     a first token; if the large tier then answers in time, the hedge is cancelled;
   - an upstream error before the first token: the fallback answers (the error's
     stable code, e.g. ``upstream_rate_limited``);
   - an upstream error in the middle of the stream: a ``restart`` marker tells the
     turn to drop what was shown (a ``replace`` frame) and the fallback's answer
     follows (``upstream_disconnected`` with ``after_chunks``).
   429s, 5xx, timeouts and dropped connections count towards the breaker.
5. **Leak guard**: the reply is watched for the canary and for runs of the system
   prompt; on a leak a ``leak`` marker ends the stream (``inference.leak``).

The reason for any fallback is in ``StreamInfo.fallback`` and goes into the ``done``
frame and the stored reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import re
import unicodedata
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any, cast

from django.conf import settings

from . import cache
from .aio import astream, run_blocking
from .backends.openai import UpstreamError
from .base import ChatMessage, GenerationChunk, GenerationRequest, InferenceError, ModelBackend
from .breaker import BreakerState, CircuitBreaker, Permit, breaker_for
from .leak import LeakGuard
from .prompts import canary_note
from .registry import get_backend, resolve_role
from .sanitize import prompt_sanitize
from .tokens import request_count_tokens

logger = logging.getLogger(__name__)

# Markers in GenerationChunk.extra for the turn.
RESTART = "restart"  # drop what was shown; the fallback's answer follows
LEAK = "leak"  # the reply leaked the system prompt or canary: stop, refuse

_CACHE_PIECES = re.compile(r"\S+\s*|\s+")


@dataclass
class StreamInfo:
    role: str = ""
    model: str = ""
    fallback: dict[str, Any] | None = None
    cached: bool = False
    queue_ms: float = 0.0
    prompt_tokens_counted: int | None = None
    breaker: str = ""
    leak: str = ""


# -- hygiene ------------------------------------------------------------------------------


def prompt_strip_controls(text: str) -> str:
    """For prompts we build from shop data: drop control, format and private-use
    characters only (no NFKC: it would rewrite CJK punctuation the guard compares)."""
    return "".join(
        ch
        for ch in text
        if ch in "\n\t" or unicodedata.category(ch) not in {"Cc", "Cf", "Co", "Cn", "Cs"}
    )


def request_prepare(request: GenerationRequest) -> GenerationRequest:
    """Sanitize before the model sees anything; the system message carries the canary."""
    if request.messages is None:
        return dataclasses.replace(request, prompt=prompt_strip_controls(request.prompt or ""))
    canary = settings.TIERDESK_PROMPT_CANARY
    messages = []
    for message in request.messages:
        if message.role == "system":
            content = message.content
            if canary not in content:
                content = f"{content}\n{canary_note()}"
            messages.append(ChatMessage("system", content))
        else:
            messages.append(ChatMessage(message.role, prompt_sanitize(message.content)))
    return dataclasses.replace(request, messages=tuple(messages))


def _system_prompt(request: GenerationRequest) -> str | None:
    if request.messages is None:
        return None
    return "\n".join(m.content for m in request.messages if m.role == "system") or None


# -- streams ------------------------------------------------------------------------------


def _open(
    backend: ModelBackend, request: GenerationRequest
) -> AsyncGenerator[GenerationChunk, None]:
    """A remote backend streams on the loop; a local one in the inference pool."""
    native = getattr(backend, "astream", None)
    gen = native(request) if native is not None else astream(backend, request)
    return cast(AsyncGenerator[GenerationChunk, None], gen)


async def _aclose(gen: Any) -> None:
    with contextlib.suppress(Exception):
        await gen.aclose()


async def _cancel(task: asyncio.Future[Any] | None) -> None:
    if task is None or task.done():
        if task is not None and not task.cancelled():
            task.exception()  # retrieved: no "exception was never retrieved" warning
        return
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def is_remote(backend: ModelBackend) -> bool:
    return getattr(backend, "astream", None) is not None


def is_hosted(backend: ModelBackend) -> bool:
    """A remote API, not our own model server: fast first tokens, estimated counts."""
    return is_remote(backend) and not getattr(backend, "model_server", False)


def large_is_distinct(role: str = "large") -> bool:
    return resolve_role(role) != resolve_role(settings.TIERDESK_L3_FALLBACK_ROLE)


async def _large_refusal(
    large: ModelBackend,
    request: GenerationRequest,
    *,
    info: StreamInfo,
    over_budget: bool,
    remote: bool,
    breaker: CircuitBreaker,
) -> tuple[str, Permit]:
    """Why the large tier must not even be asked ("" when it may be), and the breaker's
    permit for the request: the session's budget, the prompt's size, the breaker."""
    reason = ""
    if over_budget:
        reason = "session_budget"
    else:
        if remote:
            counted = request_count_tokens(large, request)  # an estimate: pure Python
        else:
            counted = await run_blocking(request_count_tokens, large, request)
        info.prompt_tokens_counted = counted
        if counted > settings.TIERDESK_L3_MAX_PROMPT_TOKENS:
            reason = "prompt_too_long"
    permit = Permit(True, BreakerState.CLOSED)
    if not reason:
        permit = await breaker.allow()
        info.breaker = str(permit.state)
        if not permit.allowed:
            reason = "breaker_open"
    return reason, permit


@dataclass
class _Hedge:
    """The fallback started speculatively while the large tier has no first token."""

    stream: AsyncGenerator[GenerationChunk, None] | None = None
    task: asyncio.Future[GenerationChunk] | None = None

    async def drop(self) -> None:
        await _cancel(self.task)
        if self.stream is not None:
            await _aclose(self.stream)
            self.stream = None


async def _large_first(
    first_task: asyncio.Future[GenerationChunk],
    hedge: _Hedge,
    *,
    fallback: ModelBackend,
    request: GenerationRequest,
    breaker: CircuitBreaker,
    permit: Permit,
    timeout_ms: int,
    deadline: float,
) -> tuple[GenerationChunk | None, str]:
    """Wait for the large tier's first chunk until ``deadline``, starting the hedge after
    ``TIERDESK_L3_HEDGE_MS``; return it (None: an empty reply) and why it failed ("")."""
    loop = asyncio.get_running_loop()
    hedge_ms = settings.TIERDESK_L3_HEDGE_MS
    if 0 <= hedge_ms < timeout_ms:
        done, _ = await asyncio.wait({first_task}, timeout=hedge_ms / 1000)
        if not done:
            hedge.stream = _open(fallback, request)
            hedge.task = asyncio.ensure_future(hedge.stream.__anext__())
    done, _ = await asyncio.wait({first_task}, timeout=max(0.0, deadline - loop.time()))
    if not done:
        await _cancel(first_task)  # closes the connection: the server stops too
        await breaker.record_failure(permit)
        return None, "timeout"
    try:
        return first_task.result(), ""
    except StopAsyncIteration:
        return None, ""
    except InferenceError as exc:
        if isinstance(exc, UpstreamError) and exc.counts_for_breaker:
            await breaker.record_failure(permit)
        else:
            await breaker.record_success(permit)  # it answered: it is up
        logger.warning("large tier failed before its first token: %s", exc)
        return None, exc.code


async def _large_relay(
    first: GenerationChunk | None,
    upstream: AsyncGenerator[GenerationChunk, None],
    *,
    breaker: CircuitBreaker,
    permit: Permit,
    serve_fallback: Callable[..., AsyncGenerator[GenerationChunk, None]],
) -> AsyncGenerator[GenerationChunk, None]:
    """Relay the large tier's reply; an error mid-stream restarts it on the fallback."""
    sent = 0
    try:
        if first is not None:
            sent += 1
            yield first
        async for chunk in upstream:
            sent += 1
            yield chunk
    except InferenceError as exc:
        if isinstance(exc, UpstreamError) and exc.counts_for_breaker:
            await breaker.record_failure(permit)
        logger.warning("large tier failed after %d chunks: %s", sent, exc)
        yield GenerationChunk(text="", extra={RESTART: True})
        async for chunk in serve_fallback(exc.code, after_chunks=sent):
            yield chunk
        return
    await breaker.record_success(permit)


async def large_stream(
    request: GenerationRequest, *, info: StreamInfo, over_budget: bool = False
) -> AsyncGenerator[GenerationChunk, None]:
    large = get_backend("large")
    fallback = get_backend(settings.TIERDESK_L3_FALLBACK_ROLE)
    # Our model server runs the same local model a CPU prefills slowly (its timeout is
    # the local one) and counts tokens exactly over HTTP (off the event loop).
    remote = is_hosted(large)
    info.model = large.model_id

    async def serve_fallback(reason: str, **detail: Any) -> AsyncGenerator[GenerationChunk, None]:
        info.fallback = {"reason": reason, **detail}
        info.model = fallback.model_id
        async with contextlib.aclosing(_open(fallback, request)) as gen:
            async for chunk in gen:
                yield chunk

    breaker = breaker_for("large")
    reason, permit = await _large_refusal(
        large, request, info=info, over_budget=over_budget, remote=remote, breaker=breaker
    )
    if reason:
        async for chunk in serve_fallback(reason):
            yield chunk
        return

    loop = asyncio.get_running_loop()
    timeout_ms = (
        settings.TIERDESK_L3_FIRST_TOKEN_TIMEOUT_MS
        if remote
        else settings.TIERDESK_L3_LOCAL_FIRST_TOKEN_TIMEOUT_MS
    )
    deadline = loop.time() + timeout_ms / 1000
    upstream = _open(large, request)
    first_task: asyncio.Future[GenerationChunk] = asyncio.ensure_future(upstream.__anext__())
    hedge = _Hedge()
    try:
        first, reason = await _large_first(
            first_task,
            hedge,
            fallback=fallback,
            request=request,
            breaker=breaker,
            permit=permit,
            timeout_ms=timeout_ms,
            deadline=deadline,
        )
        if not reason:
            # The large tier answered in time: drop the hedge, relay it.
            await hedge.drop()
            relay = _large_relay(
                first, upstream, breaker=breaker, permit=permit, serve_fallback=serve_fallback
            )
            async with contextlib.aclosing(relay) as gen:
                async for chunk in gen:
                    yield chunk
            return

        # Fallback, in the same stream. The hedge has usually prefilled already.
        info.fallback = {"reason": reason}
        info.model = fallback.model_id
        if hedge.stream is not None and hedge.task is not None:
            try:
                chunk = await hedge.task
            except StopAsyncIteration:
                return
            yield chunk
            async for chunk in hedge.stream:
                yield chunk
            return
        async for chunk in serve_fallback(reason):
            yield chunk
    finally:
        await _cancel(first_task)
        await _aclose(upstream)
        await hedge.drop()


async def model_stream(
    *,
    role: str,
    request: GenerationRequest,
    info: StreamInfo,
    vip: bool = False,
    over_budget: bool = False,
    use_cache: bool = False,
    personal: bool = False,
    no_cache: bool = False,
) -> AsyncGenerator[GenerationChunk, None]:
    from inference.queue import model_slot

    backend = get_backend(role)
    real_role = resolve_role(role)
    info.role, info.model = real_role, backend.model_id
    request = request_prepare(request)
    distinct_large = role == "large" and large_is_distinct(role)
    async with model_slot(role=real_role, vip=vip) as waited:
        info.queue_ms = round(waited * 1000, 1)
        key = None
        if use_cache and cache.cacheable(request=request, personal=personal, no_cache=no_cache):
            if not backend.model_version:
                await run_blocking(backend.load)  # the version is the loaded file's sha256
            key = cache.cache_key(
                request=request, model_id=backend.model_id, model_version=backend.model_version
            )
            hit = await cache.cache_get(key)
            if hit is not None:
                info.cached = True
                for piece in _CACHE_PIECES.findall(hit):
                    yield GenerationChunk(text=piece)
                yield GenerationChunk(text="", finish_reason="end")
                return
        system = _system_prompt(request)

        def new_guard() -> LeakGuard | None:
            if system is None:
                return None
            return LeakGuard(system_prompt=system, canary=settings.TIERDESK_PROMPT_CANARY)

        guard = new_guard()
        parts: list[str] = []
        clean_end = False
        source = (
            large_stream(request, info=info, over_budget=over_budget)
            if distinct_large
            else _open(backend, request)
        )
        async with contextlib.aclosing(source) as stream:
            async for chunk in stream:
                if chunk.extra.get(RESTART):
                    guard, parts = new_guard(), []
                    yield chunk
                    continue
                text = chunk.text
                if guard is not None:
                    released = guard.feed(text)
                    if released is None:
                        info.leak = guard.reason
                        logger.warning("leak guard stopped a reply (%s)", guard.reason)
                        yield GenerationChunk(text="", extra={LEAK: guard.reason})
                        return
                    text = released
                    if chunk.usage is not None:
                        tail = guard.finish() or ""
                        text += tail
                if chunk.usage is not None:
                    clean_end = True
                parts.append(text)
                if text or chunk.finish_reason or chunk.usage is not None:
                    yield dataclasses.replace(chunk, text=text)
        if (
            key is not None
            and clean_end
            and info.fallback is None
            and not info.leak
            and "".join(parts).strip()
        ):
            await cache.cache_set(key, "".join(parts))
