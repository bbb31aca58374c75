"""The model server: the local GGUF models in their own process (``manage.py modelserver``).

Each role gets its own llama.cpp server (xllamacpp) with its OpenAI-compatible HTTP
listener on ``TIERDESK_MODEL_SERVER_HOST`` at ``TIERDESK_MODEL_SERVER_PORT`` plus the
role's offset (fast 0, fallback 1, large 2), configured exactly as the in-process
backend (``inference.backends.llamacpp.server_params``): checksummed file, ``n_parallel``
slots with continuous batching, prompt-prefix cache (``swa_full`` for Gemma 3), threads.
Daphne and Celery reach it through ``OpenAIBackend`` (TIERDESK_MODELS=server, the
default), so the web processes only do I/O and the two scale separately.

``serve`` loads, warms up and serves until SIGTERM; ``supervise`` keeps a child
``serve`` process running, restarting it when it dies (``make run``; under systemd,
``Restart=always`` does the same). Endpoints per role: ``/v1/completions``,
``/v1/chat/completions``, ``/health``, ``/slots``, ``/metrics``, ``/tokenize``.
"""

from __future__ import annotations

import contextlib
import ctypes
import ipaddress
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from django.conf import settings

from .backends.llamacpp import LlamaCppBackend
from .base import ChatMessage, GenerationRequest

logger = logging.getLogger(__name__)

WARMUP_TOKENS = (10, 50, 100)


def role_port(role: str, base_port: int | None = None) -> int:
    base = settings.TIERDESK_MODEL_SERVER_PORT if base_port is None else base_port
    return base + settings.MODEL_SERVER_PORT_OFFSETS[role]


def host_is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 or localhost: a listener no other machine can reach."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def local_roles() -> list[str]:
    """The roles with a local GGUF (the default ``--roles``)."""
    return list(settings.LOCAL_MODELS)


def _warm(backend: LlamaCppBackend, requests: int) -> None:
    for i in range(requests):
        text, tokens = "Warm-up: say hello to a shopper.", WARMUP_TOKENS[i % len(WARMUP_TOKENS)]
        request = (
            GenerationRequest(messages=(ChatMessage("user", text),), max_tokens=tokens)
            if backend.chat
            else GenerationRequest(prompt=text + "\nReply:", max_tokens=tokens)
        )
        backend.complete(request)


def _load_nicer(backend: LlamaCppBackend, nice: int, *, idle: bool = False) -> None:
    """Load ``backend`` from a thread ``nice`` steps nicer than this one (``idle``: and
    under SCHED_IDLE, which runs only on cores nothing else wants).

    Linux keeps a nice value and a scheduling policy per thread and a new thread starts
    with its creator's: the llama.cpp server's loop thread is started by the thread that
    loads the model, and its compute threads by the loop thread, so every thread of that
    role runs at the loading thread's priority, and the other roles keep theirs. On
    cores shared by the roles, a fast-model reply (L1, 400 ms budget) then no longer
    waits behind a fallback-model prompt.

    Five nice steps were not enough: llama.cpp's threads meet at a barrier after every
    operation and spin while they wait, so the fast model runs at the pace of whichever
    of its threads a fallback thread displaced. Measured (bench/l1_contention.py, 10 L1
    prompts each): the fast model's first token p50 133 ms alone, 191 ms while the
    fallback read L2 prompts, 286 ms beside those and one busy web core; with the
    fallback at SCHED_IDLE 138, 144 and 208 ms."""
    if nice <= 0 and not idle:
        backend.load()
        return
    failed: list[BaseException] = []

    def load() -> None:
        tid = threading.get_native_id()
        with contextlib.suppress(OSError):  # not allowed: load at this thread's priority
            os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + nice)
        if idle:
            with contextlib.suppress(OSError, AttributeError):
                os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
        try:
            backend.load()
        except BaseException as exc:  # raised again in the caller's thread
            failed.append(exc)

    loader = threading.Thread(target=load, name=f"load-{backend.role}")
    loader.start()
    loader.join()
    if failed:
        raise failed[0]


def serve(
    roles: list[str],
    *,
    base_port: int | None = None,
    host: str = "127.0.0.1",
    status_file: Path | None = None,
    warmup: int = 3,
    lifetime_s: float = 0,
    out: Any = sys.stdout,
) -> None:
    """Load and warm each role's model, open its listener, serve until SIGTERM/SIGINT
    (or ``lifetime_s``, a bound for tests)."""
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    backends: dict[str, LlamaCppBackend] = {}
    for role in roles:
        if role not in settings.LOCAL_MODELS:
            raise ValueError(f"role {role!r} has no local model (known: {local_roles()})")
        config = dict(settings.LOCAL_MODELS[role]["CONFIG"])
        config["port"] = role_port(role, base_port)
        config["host"] = host
        config["api_key"] = settings.TIERDESK_MODEL_SERVER_API_KEY
        backend = LlamaCppBackend(role, config)
        started = time.perf_counter()
        _load_nicer(backend, int(config.get("nice") or 0), idle=bool(config.get("idle")))
        _warm(backend, warmup)
        backends[role] = backend
        print(
            f"modelserver: {role} {backend.model_id} at {backend.listening_address} "
            f"({config.get('n_parallel')} slots, loaded and warmed in "
            f"{time.perf_counter() - started:.1f}s)",
            file=out,
            flush=True,
        )
    urls = {role: backend.listening_address for role, backend in backends.items()}
    if status_file is not None:
        status_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = status_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({"pid": os.getpid(), "roles": urls, "ready": True}))
        tmp.replace(status_file)
    print(f"modelserver: ready {json.dumps(urls)}", file=out, flush=True)
    deadline = time.monotonic() + lifetime_s if lifetime_s else None
    while not stop.wait(0.5):
        if deadline is not None and time.monotonic() > deadline:
            break
    if status_file is not None:
        with contextlib.suppress(OSError):
            if json.loads(status_file.read_text()).get("pid") == os.getpid():
                status_file.unlink()
    for backend in backends.values():
        backend.close()


def _die_with_parent() -> None:
    """In the child: SIGTERM when the supervisor dies (Linux prctl PR_SET_PDEATHSIG)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)


def supervise(
    child_argv: list[str],
    *,
    out: Any = sys.stdout,
    max_backoff_s: float = 30,
    lifetime_s: float = 0,
) -> int:
    """Run ``child_argv`` (a ``serve``), start it again whenever it exits by itself.

    Back-off: 1 s, doubling to ``max_backoff_s`` while it keeps dying young (under
    60 s), back to 1 s after a good run. SIGTERM/SIGINT (or ``lifetime_s``, a bound
    for tests) stop the child and return.
    """
    stopping = threading.Event()
    child: subprocess.Popen[bytes] | None = None

    def on_signal(*_: Any) -> None:
        stopping.set()
        if child is not None and child.poll() is None:
            child.terminate()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    if lifetime_s:
        timer = threading.Timer(lifetime_s, on_signal)
        timer.daemon = True
        timer.start()
    backoff = 1.0
    restarts = 0
    while not stopping.is_set():
        started = time.monotonic()
        child = subprocess.Popen(child_argv, preexec_fn=_die_with_parent)
        print(f"modelserver supervisor: started pid {child.pid}", file=out, flush=True)
        code = child.wait()
        if stopping.is_set():
            break
        lived = time.monotonic() - started
        backoff = 1.0 if lived > 60 else min(max_backoff_s, backoff * 2 if restarts else 1.0)
        restarts += 1
        print(
            f"modelserver supervisor: pid {child.pid} exited with {code} after {lived:.0f}s; "
            f"restart {restarts} in {backoff:.0f}s",
            file=out,
            flush=True,
        )
        stopping.wait(backoff)
    if child is not None and child.poll() is None:
        try:
            child.wait(timeout=15)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(timeout=5)
    return 0
