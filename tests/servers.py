"""Fixtures with real servers and isolated shared state, for the tests of the model
backends (tests/inference) and of the turns that use them (tests/chatbot). The root
conftest makes them available everywhere.

- ``l3_url``: the OpenAI-compatible HTTP listener of a real xllamacpp server in its own
  process, serving the local Qwen2.5-0.5B; it plays the remote large model.
- ``remote_large``: registers an ``OpenAIBackend`` pointed at it as the ``large`` role.
- ``model_server``: a separate xllamacpp server in a subprocess, for kill -9 and stop.
- ``http_fault_server``: a tiny HTTP server that answers 429 or 500. It is the one fake
  here, for failures a real llama.cpp server can't be made to produce.
- ``private_redis``: a redis-server of our own on a free port, to stop and restart.
- ``isolated_state``: a test's own breaker, limit and cache keys (modules that touch
  them ask for it with ``pytest.mark.usefixtures("isolated_state")``).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.conf import settings

from chatbot.limits import limits_reset
from inference import registry, state
from inference.backends.openai import OpenAIBackend
from inference.breaker import breakers_reset
from inference.cache import cache_clear_local
from inference.catalog import CATALOG
from inference.queue import queue_reset
from tests.faults import PrivateRedis

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def isolated_state(settings: Any) -> Iterator[None]:
    """Every test gets its own breaker, limits and cache keys (and fresh objects)."""
    settings.TIERDESK_STATE_PREFIX = f"l3test-{uuid.uuid4().hex[:10]}"
    # Production's 250 ms is for a Redis next door. A test machine busy with models can
    # take longer to connect, and failing open then hides what the test is about. The
    # tests of an unreachable Redis use refused connections, which fail at once.
    settings.TIERDESK_STATE_REDIS_TIMEOUT_S = 3.0
    breakers_reset()
    limits_reset()
    queue_reset()
    state.reset()
    cache_clear_local()
    yield
    breakers_reset()
    limits_reset()
    queue_reset()
    state.reset()
    cache_clear_local()


@pytest.fixture(scope="session")
def fallback_model(model_files: None) -> Any:
    backend = registry.get_backend("fallback")
    backend.load()
    return backend


@pytest.fixture(scope="session")
def l3_url(model_files: None) -> Iterator[str]:
    """A real llama.cpp server in its own process plays the remote large model.

    Its own process, like a real remote API: the in-process listener of the registry's
    fallback model went away when another test reloaded the registry (seen in full-suite
    runs), and a remote server must not share the fallback's fate anyway.
    """
    entry = CATALOG["qwen2.5-coder-0.5b-instruct-q4km"]
    server = ModelServer(settings.TIERDESK_MODEL_DIR / entry.filename, parallel=8, lifetime_s=3600)
    try:
        # The listener's first request is slow (seconds): pay it once, here.
        body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}
        httpx.post(f"{server.url}/v1/chat/completions", json=body, timeout=120).raise_for_status()
        yield server.url
    finally:
        server.kill()


def remote(url: str, **config: Any) -> OpenAIBackend:
    return OpenAIBackend(
        "large",
        {"api_base": url, "model": "qwen2.5-0.5b", "connect_timeout_s": 1.0, **config},
    )


@contextlib.contextmanager
def large_registered(url: str, **config: Any) -> Iterator[OpenAIBackend]:
    """``remote(url, **config)`` as the ``large`` role, unregistered and closed after."""
    backend = remote(url, **config)
    registry.register("large", backend)
    try:
        yield backend
    finally:
        registry.unregister("large")
        backend.close()


@pytest.fixture
def remote_large(l3_url: str) -> Iterator[OpenAIBackend]:
    with large_registered(l3_url) as backend:
        yield backend


class ModelServer:
    """xllamacpp in its own process: kill -9 it, or SIGSTOP it to make it hang."""

    def __init__(self, model_path: Path, parallel: int = 1, lifetime_s: int = 170) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.inference.serve_model",
                str(model_path),
                str(parallel),
                str(lifetime_s),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        assert line.startswith("http://"), f"model server did not start: {line!r}"
        self.url = line

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def pause(self) -> None:
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGCONT)


@pytest.fixture
def model_server(model_files: None) -> Iterator[ModelServer]:
    entry = CATALOG["qwen2.5-coder-0.5b-instruct-q4km"]
    server = ModelServer(settings.TIERDESK_MODEL_DIR / entry.filename)
    try:
        yield server
    finally:
        server.resume()
        server.kill()


class FaultServer:
    """Answers every request with ``status`` (and ``Retry-After``). A fake: a real
    llama.cpp server never answers 429, and we can't make it return 5xx on demand."""

    def __init__(self) -> None:
        self.status = 429
        self.requests = 0
        self.retry_after = "7"  # delay-seconds or an HTTP date (RFC 9110)
        self.paths: list[str] = []  # the request paths, to check the client's base URL
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                owner.requests += 1
                owner.paths.append(self.path)
                length = int(self.headers.get("content-length") or 0)
                self.rfile.read(length)
                body = json.dumps({"error": {"code": owner.status, "message": "nope"}}).encode()
                self.send_response(owner.status)
                self.send_header("content-type", "application/json")
                self.send_header("retry-after", owner.retry_after)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                return None

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def http_fault_server() -> Iterator[FaultServer]:
    server = FaultServer()
    yield server
    server.close()


@pytest.fixture
def private_redis(settings: Any) -> Iterator[PrivateRedis]:
    server = PrivateRedis()
    settings.TIERDESK_STATE_REDIS_URL = server.url
    state.reset()
    try:
        yield server
    finally:
        server.stop()
        state.reset()
