"""Local GGUF backend on xllamacpp (llama.cpp in-process).

One ``xllamacpp.Server`` per role per process, loaded once. Its ``n_parallel`` slots
serve concurrent requests; ``handle_completions`` blocks the calling thread and calls
back once per token, so ``stream`` runs in a worker thread (see ``inference.aio``)
and hands chunks over through a queue.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from django.conf import settings

from ..base import GenerationChunk, GenerationRequest, InferenceError, Usage
from ..capacity import track
from ..catalog import catalog_name, is_chat_model, resolve_model_file
from .wire import read_chunk, request_body

logger = logging.getLogger(__name__)

_DONE = object()


def server_params(config: dict[str, Any], path: Path, *, port: int = 0) -> Any:
    """``xllamacpp.CommonParams`` for a role's CONFIG: the one place the engine is tuned.

    Used in-process (``LlamaCppBackend``) and by the model server process
    (``manage.py modelserver``), so both run the model the same way: ``n_parallel``
    slots with continuous batching, ``threads``, the prompt-prefix cache and, when
    CONFIG asks for it, n-gram speculative decoding. ``port`` 0: a free port.
    """
    import xllamacpp as xlc

    params = xlc.CommonParams()
    params.model.path = str(path)
    n_parallel = int(config.get("n_parallel", 4))
    params.n_parallel = n_parallel
    params.n_ctx = n_parallel * int(config.get("n_ctx_per_slot", 1024))
    threads = int(config.get("threads") or settings.TIERDESK_THREADS)
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.cont_batching = True
    # Gemma 3 uses sliding-window attention; without a full-size SWA cache llama.cpp
    # re-processes the whole few-shot prefix on every call (measured: 410-570 ms vs
    # 90-170 ms to first token).
    params.swa_full = True
    params.cache_prompt = True
    params.warmup = False  # our own warm-up runs real requests (docs/product.md)
    params.verbosity = -1
    # /metrics for the capacity client (inference.capacity); /slots is on by default.
    params.endpoint_metrics = True
    params.port = int(port)
    # The listener's address: 127.0.0.1 unless CONFIG says (a container network).
    params.hostnames = [str(config.get("host") or "127.0.0.1")]
    # A key (the model server's, TIERDESK_MODEL_SERVER_API_KEY): llama.cpp then answers
    # only requests that carry it, /health excepted.
    if config.get("api_key"):
        params.api_keys = [str(config["api_key"])]
    speculative = str(config.get("speculative") or "")
    if speculative:
        speculative_configure(params, speculative)
    return params


SPECULATIVE_TYPES = {
    "ngram-simple": "COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE",
    "ngram-map-k": "COMMON_SPECULATIVE_TYPE_NGRAM_MAP_K",
    "ngram-cache": "COMMON_SPECULATIVE_TYPE_NGRAM_CACHE",
    "ngram-mod": "COMMON_SPECULATIVE_TYPE_NGRAM_MOD",
}


def speculative_configure(params: Any, kind: str) -> None:
    """Draft-model-free speculative decoding (prompt lookup): ``kind`` is a key of
    ``SPECULATIVE_TYPES``. The drafts come from n-grams already in the context, which
    suits L1 replies that copy the facts from the prompt."""
    import xllamacpp as xlc

    if kind not in SPECULATIVE_TYPES:
        known = ", ".join(sorted(SPECULATIVE_TYPES))
        raise InferenceError("config_error", f"speculative {kind!r}: use one of {known}")
    value = getattr(xlc.common_speculative_type, SPECULATIVE_TYPES[kind])
    params.speculative.types = [value]


class LlamaCppBackend:
    can_stream = True

    def __init__(self, role: str, config: dict[str, Any]) -> None:
        self.role = role
        self.config = config
        self.model_id = catalog_name(
            str(config.get("model") or Path(config.get("path", "model")).stem)
        )
        self.model_version = ""
        self.path: Path | None = None
        self.chat = bool(config.get("chat", is_chat_model(self.model_id)))
        self._server: Any = None
        self._lock = threading.Lock()
        self._http: httpx.Client | None = None
        # Chunks the engine produced for the most recent finished request: lets a test
        # see that cancelling really stopped decoding (count, not wall time).
        self.last_request_chunks = 0
        self._last_worker: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def load(self) -> None:
        with self._lock:
            if self._server is not None:
                return
            path, sha = resolve_model_file(
                model=str(self.config.get("model", "")),
                path=str(self.config.get("path", "")),
                sha256=str(self.config.get("sha256", "")),
                model_dir=settings.TIERDESK_MODEL_DIR,
            )
            params = server_params(self.config, path, port=int(self.config.get("port") or 0))
            n_parallel = int(params.n_parallel)
            started = time.perf_counter()
            import xllamacpp as xlc

            self._server = xlc.Server(params)
            self.path, self.model_version = path, sha
            logger.info(
                "loaded %s (%s) for role %s in %.2fs, %d slots",
                self.model_id,
                path.name,
                self.role,
                time.perf_counter() - started,
                n_parallel,
            )

    def close(self) -> None:
        with self._lock:
            self._server = None
            if self._http is not None:
                self._http.close()
                self._http = None

    @property
    def loaded(self) -> bool:
        return self._server is not None

    @property
    def listening_address(self) -> str:
        """llama.cpp's own OpenAI-compatible HTTP listener for this model."""
        self.load()
        return str(self._server.listening_address)

    # -- generation ------------------------------------------------------------------------
    def _payload(self, request: GenerationRequest) -> dict[str, Any]:
        # llama.cpp puts a completion's usage in its final chunk unasked.
        body = request_body(request, usage_on_prompts=False)
        body["cache_prompt"] = request.cache_prompt
        return body

    def stream(self, request: GenerationRequest) -> Iterator[GenerationChunk]:
        """Yield chunks; closing the generator cancels the generation in llama.cpp."""
        self.load()
        server = self._server
        chat = request.messages is not None
        if chat and not self.chat:
            raise InferenceError("bad_request", f"{self.model_id} is a base model: send a prompt")
        q: queue.Queue[Any] = queue.Queue()
        cancelled = threading.Event()
        produced = 0

        def on_chunk(data: Any) -> bool:
            nonlocal produced
            produced += 1
            q.put(data)
            # Returning True tells xllamacpp to stop generating (consumer went away).
            return cancelled.is_set()

        def run() -> None:
            try:
                handler = server.handle_chat_completions if chat else server.handle_completions
                result = handler(self._payload(request), on_chunk)
                if isinstance(result, dict) and "error" in result:
                    q.put(result)
            except Exception as exc:  # surfaced to the consumer as an InferenceError
                q.put(exc)
            finally:
                self.last_request_chunks = produced
                q.put(_DONE)

        worker = threading.Thread(target=run, name=f"llama-{self.role}", daemon=True)
        self._last_worker = worker
        worker.start()
        usage: Usage | None = None
        try:
            with track(self.role) as tracker:
                while True:
                    item = q.get()
                    if item is _DONE:
                        break
                    if isinstance(item, Exception):
                        raise InferenceError("model_error", f"{self.model_id}: {item}") from item
                    if isinstance(item, dict) and "error" in item:
                        raise InferenceError("model_error", f"{self.model_id}: {item['error']}")
                    text, finish, sent = read_chunk(item, chat)
                    if sent is not None:
                        usage = sent
                    if text or finish:
                        tracker.first()
                        yield GenerationChunk(text=text, finish_reason=finish)
                yield GenerationChunk(text="", finish_reason="end", usage=usage or Usage())
        finally:
            cancelled.set()

    def complete(self, request: GenerationRequest) -> tuple[str, Usage]:
        """Run to the end; for warm-up, summaries and tests."""
        parts: list[str] = []
        usage = Usage()
        for chunk in self.stream(request):
            parts.append(chunk.text)
            if chunk.usage is not None:
                usage = chunk.usage
        return "".join(parts), usage

    def count_tokens(self, text: str) -> int:
        """Exact count with the model's own tokenizer (llama.cpp's /tokenize)."""
        if self._http is None:
            key = str(self.config.get("api_key") or "")
            self._http = httpx.Client(
                base_url=self.listening_address,
                timeout=5.0,
                headers={"Authorization": f"Bearer {key}"} if key else {},
            )
        response = self._http.post("/tokenize", json={"content": text})
        response.raise_for_status()
        return len(response.json()["tokens"])
