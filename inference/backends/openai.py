"""OpenAI-compatible chat-completions backend (hosted APIs, vLLM, llama.cpp server, Ollama).

It streams server-sent events and reads token usage from the final chunk
(``stream_options.include_usage``). Timeouts are explicit: connecting, each read
(the gap between two SSE lines), writing and waiting for a pooled connection each have
their own limit. Every upstream failure becomes an ``UpstreamError`` with a stable
``code`` (docs/resilience.md, "Upstream error codes"); ``counts_for_breaker`` says
whether it is the kind of failure (429, 5xx, timeouts, a dead connection) that opens
the upstream circuit breaker.

The hot path is ``astream``, on the event loop with ``httpx.AsyncClient``: network
waits need no thread, and cancelling the task closes the connection, which makes the
server stop generating. ``stream`` is the blocking twin for warm-up, scripts and the
``ModelBackend`` interface (``inference.aio.astream`` runs it in the inference pool).
The twins share ``_Exchange`` (path, body, SSE lines, usage, error mapping, retry) and
only move bytes themselves; the body is ``wire.request_body``, as for llama.cpp.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import math
import time
import weakref
from collections.abc import AsyncGenerator, Iterator
from typing import Any, NoReturn
from urllib.parse import urlsplit

import httpx

from ..base import GenerationChunk, GenerationRequest, InferenceError, Usage
from ..capacity import track
from ..catalog import catalog_entry, catalog_name
from .wire import read_chunk, request_body

logger = logging.getLogger(__name__)


class UpstreamError(InferenceError):
    """A failure of the remote API, with a stable code (never the upstream's own text)."""

    # Codes that mean "the upstream is unhealthy": they count towards opening the
    # breaker. Client-side mistakes (400, 401, 404) do not: retrying elsewhere or
    # later would not fix them, and they must not take the tier down for everyone.
    BREAKER_CODES = frozenset(
        {
            "upstream_rate_limited",
            "upstream_error",
            "upstream_timeout",
            "upstream_unreachable",
            "upstream_disconnected",
        }
    )

    def __init__(
        self,
        code: str,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(code, message)
        self.status = status
        self.retry_after = retry_after

    @property
    def counts_for_breaker(self) -> bool:
        return self.code in self.BREAKER_CODES


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """``Retry-After`` in seconds from now: RFC 9110 allows delay-seconds or an HTTP date.

    A date in the past means "now" (0); anything unparsable is ignored (None).
    """
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # an HTTP date is always GMT; asctime form parses naive
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def api_base_url(base: str) -> str:
    """The URL requests are sent under (``{base}/chat/completions``).

    A base URL with a path is used as it is: ``https://api.openai.com/v1``,
    ``https://host/openai/v1``, ``https://host/api/paas/v4`` all work. Only a bare
    host (``http://127.0.0.1:8080``, no path) gets the OpenAI convention ``/v1``.
    """
    base = base.strip().rstrip("/")
    if urlsplit(base).path in ("", "/"):
        base += "/v1"
    return base


def error_for_status(status: int, body: str, retry_after: str | None) -> UpstreamError:
    """Map an HTTP error status to a stable code."""
    wait = retry_after_seconds(retry_after)
    detail = body[:200].replace("\n", " ")
    if status == 429:
        code = "upstream_rate_limited"
    elif status >= 500:
        code = "upstream_error"
    elif status in (401, 403):
        code = "upstream_auth"
    elif status == 408:
        code = "upstream_timeout"
    else:
        code = "upstream_bad_request"
    return UpstreamError(code, f"HTTP {status}: {detail}", status=status, retry_after=wait)


def error_for_exception(exc: Exception) -> UpstreamError:
    """Map a transport failure to a stable code."""
    if isinstance(exc, httpx.TimeoutException):
        # ConnectTimeout, ReadTimeout, WriteTimeout, PoolTimeout
        return UpstreamError("upstream_timeout", f"{type(exc).__name__}: {exc}")
    if isinstance(exc, httpx.ConnectError):
        return UpstreamError("upstream_unreachable", f"{type(exc).__name__}: {exc}")
    if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError):
        return UpstreamError("upstream_disconnected", f"{type(exc).__name__}: {exc}")
    if isinstance(exc, json.JSONDecodeError | ValueError | KeyError | TypeError):
        return UpstreamError("upstream_bad_response", f"{type(exc).__name__}: {exc}")
    return UpstreamError("upstream_error", f"{type(exc).__name__}: {exc}")


# What ``stream`` and ``astream`` catch and map; an ``UpstreamError`` passes through.
_FAILURES = (httpx.HTTPError, ValueError, KeyError, TypeError)


class _Exchange:
    """One streamed request, everything but the I/O: the sync and async twins share it.

    The path and body, reading each SSE line (usage, finish, error events), mapping an
    HTTP status or a transport failure to an ``UpstreamError`` and the closing chunk
    are written here once; ``stream`` and ``astream`` only move the bytes.
    """

    def __init__(self, request: GenerationRequest, model: str) -> None:
        self.chat = request.messages is not None
        self.path = "/chat/completions" if self.chat else "/completions"
        self.body: dict[str, Any] = {"model": model, **request_body(request)}
        self.usage: Usage | None = None
        self.finished = False  # saw a finish_reason or [DONE]
        self.done = False  # saw [DONE]

    def refuse(self, response: httpx.Response, raw: bytes) -> NoReturn:
        """An error status (``raw`` is its body): raise it with its stable code."""
        body = raw.decode("utf-8", "replace")
        raise error_for_status(response.status_code, body, response.headers.get("retry-after"))

    def feed(self, line: str) -> GenerationChunk | None:
        """One SSE line to a chunk (or None: not a ``data:`` line, or bookkeeping)."""
        if not line.startswith("data:"):
            return None
        data = line[5:].strip()
        if data == "[DONE]":
            self.done = self.finished = True
            return None
        event = json.loads(data)
        if not isinstance(event, dict):
            raise ValueError("SSE event is not an object")
        if "error" in event:
            err = event["error"]
            if not isinstance(err, dict):
                err = {"message": err}
            status = int(err.get("code") or 500) if str(err.get("code", "")).isdigit() else 500
            raise error_for_status(status, str(err.get("message", "")), None)
        text, finish, usage = read_chunk(event, self.chat)
        if usage is not None:
            self.usage = usage
        if finish:
            self.finished = True
        if text or finish:
            return GenerationChunk(text=text, finish_reason=finish)
        return None

    def failure(self, exc: Exception, attempt: int) -> UpstreamError | None:
        """The error to raise for ``exc``, or None to send the request once more.

        A keep-alive connection the server had closed fails before any response; that
        one request is safe to send again on a new connection.
        """
        if (
            attempt == 1
            and isinstance(exc, httpx.RemoteProtocolError)
            and "without sending a response" in str(exc)
        ):
            return None
        return error_for_exception(exc)

    def end(self) -> GenerationChunk:
        """The closing chunk with the usage, once the stream really finished."""
        if not self.finished:
            raise UpstreamError("upstream_disconnected", "stream ended before it finished")
        return GenerationChunk(text="", finish_reason="end", usage=self.usage or Usage())


class OpenAIBackend:
    """``{"BACKEND": "inference.backends.openai.OpenAIBackend", "CONFIG": {...}}``.

    CONFIG: ``api_base`` (``https://host/v1``; see ``api_base_url``), ``api_key``, ``model``,
    ``model_version`` (part of the response-cache key: change it when the provider's
    model changes; defaults to ``model@api_base``), ``connect_timeout_s``,
    ``read_timeout_s``, ``write_timeout_s``, ``pool_timeout_s``, ``max_connections``,
    ``chars_per_token`` (the documented token estimate, see ``count_tokens``).
    """

    can_stream = True

    def __init__(self, role: str, config: dict[str, Any]) -> None:
        self.role = role
        self.config = config
        if not str(config.get("api_base") or "").strip():
            raise InferenceError("config_error", f"role {role!r}: api_base is not set")
        base = api_base_url(str(config["api_base"]))
        self.api_base = base
        self.model_id = str(config.get("model") or "default")
        # Our own llama.cpp model server (``manage.py modelserver``): exact token counts
        # from its /tokenize, the catalogue's checksum as the model version, and a base
        # model (the fast role) takes ``prompt`` only.
        self.model_server = bool(config.get("model_server"))
        if self.model_server:
            self.model_id = catalog_name(self.model_id)
        entry = catalog_entry(self.model_id) if self.model_server else None
        version = config.get("model_version") or (entry.sha256 if entry else "")
        self.model_version = str(version or f"{self.model_id}@{base}")
        self.chat = bool(config.get("chat", entry.chat_template if entry else True))
        self.timeout = httpx.Timeout(
            connect=float(config.get("connect_timeout_s", 2.0)),
            read=float(config.get("read_timeout_s", 30.0)),
            write=float(config.get("write_timeout_s", 5.0)),
            pool=float(config.get("pool_timeout_s", 2.0)),
        )
        self.limits = httpx.Limits(
            max_connections=int(config.get("max_connections", 100)),
            max_keepalive_connections=int(config.get("max_keepalive", 20)),
            keepalive_expiry=float(config.get("keepalive_expiry_s", 4.0)),
        )
        self.chars_per_token = float(config.get("chars_per_token", 4.0))
        self._client: httpx.Client | None = None
        # One AsyncClient per event loop: its connection pool belongs to that loop.
        self._aclients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient]
        self._aclients = weakref.WeakKeyDictionary()

    # -- lifecycle -------------------------------------------------------------------------
    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream"}
        key = str(self.config.get("api_key") or "")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def load(self) -> None:
        """Nothing to load; the first request opens the connection pool."""

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        # AsyncClients are closed with their loop; drop our references.
        self._aclients = weakref.WeakKeyDictionary()

    def _client_options(self) -> dict[str, Any]:
        return {
            "base_url": self.api_base,
            "timeout": self.timeout,
            "limits": self.limits,
            "headers": self._headers(),
        }

    def _sync_client(self) -> httpx.Client:
        if self._client is None:
            self._client = httpx.Client(**self._client_options())
        return self._client

    def _async_client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        client = self._aclients.get(loop)
        if client is None or client.is_closed:
            client = httpx.AsyncClient(**self._client_options())
            self._aclients[loop] = client
        return client

    # -- requests --------------------------------------------------------------------------
    async def astream(self, request: GenerationRequest) -> AsyncGenerator[GenerationChunk, None]:
        """Stream on the running event loop; leaving early closes the connection."""
        exchange = _Exchange(request, self.model_id)
        client = self._async_client()
        with track(self.role) as tracker:
            for attempt in (1, 2):
                try:
                    async with client.stream("POST", exchange.path, json=exchange.body) as response:
                        if response.status_code >= 400:
                            exchange.refuse(response, await response.aread())
                        async for line in response.aiter_lines():
                            if (chunk := exchange.feed(line)) is not None:
                                tracker.first()
                                yield chunk
                            if exchange.done:
                                break
                    break
                except _FAILURES as exc:
                    if (error := exchange.failure(exc, attempt)) is not None:
                        raise error from exc
            yield exchange.end()

    def stream(self, request: GenerationRequest) -> Iterator[GenerationChunk]:
        """The blocking twin of ``astream`` (run it in a worker thread)."""
        exchange = _Exchange(request, self.model_id)
        client = self._sync_client()
        with track(self.role) as tracker:
            for attempt in (1, 2):
                try:
                    with client.stream("POST", exchange.path, json=exchange.body) as response:
                        if response.status_code >= 400:
                            exchange.refuse(response, response.read())
                        for line in response.iter_lines():
                            if (chunk := exchange.feed(line)) is not None:
                                tracker.first()
                                yield chunk
                            if exchange.done:
                                break
                    break
                except _FAILURES as exc:
                    if (error := exchange.failure(exc, attempt)) is not None:
                        raise error from exc
            yield exchange.end()

    def count_tokens(self, text: str) -> int:
        """The model server's exact count (llama.cpp's /tokenize), else an estimate."""
        if self.model_server:
            try:
                root = self.api_base.removesuffix("/v1")
                response = self._sync_client().post(f"{root}/tokenize", json={"content": text})
                response.raise_for_status()
                return len(response.json()["tokens"])
            except (httpx.HTTPError, ValueError, KeyError):
                pass  # the estimate below errs high, the safe side
        return self.estimate_tokens(text)

    def estimate_tokens(self, text: str) -> int:
        """A documented estimate: the remote tokenizer is unknown here.

        One token per CJK character, one per ``chars_per_token`` (4) other characters,
        rounded up. For English BPE tokenizers (GPT-4o, Qwen, Llama 3) this is within
        about 15% and errs high on code and ids, which is the safe side for a
        threshold (docs/resilience.md, "Token pre-count").
        """
        cjk = sum(1 for ch in text if "\u3000" <= ch <= "\u9fff" or "\uff00" <= ch <= "\uffef")
        return cjk + math.ceil((len(text) - cjk) / self.chars_per_token)
