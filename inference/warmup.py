"""Warm-up before ready (docs/product.md: dummy requests of 10, 50 and 100 tokens, 5 in all).

The first requests after a load pay for page faults and cold caches; serving a
shopper with them would blow the first-chunk target. ``/readyz`` answers 503 until
every role in ``TIERDESK_WARM_ROLES`` is loaded and warmed, so a load balancer
sends no traffic to a cold process.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from django.conf import settings

from .base import ChatMessage, GenerationRequest
from .registry import get_backend, resolve_role

logger = logging.getLogger(__name__)

WARMUP_TOKENS = (10, 50, 100)


@dataclass
class Readiness:
    ready: threading.Event = field(default_factory=threading.Event)
    error: str = ""
    started_at: float = 0.0
    finished_at: float = 0.0
    requests: int = 0
    roles: list[str] = field(default_factory=list)
    # What the warm-up is doing now, for whoever waits on /readyz (`make run` prints it).
    stage: str = "starting"

    def as_dict(self) -> dict[str, object]:
        return {
            "ready": self.ready.is_set(),
            "stage": self.stage,
            "error": self.error,
            "warmup_requests": self.requests,
            "roles": self.roles,
            "warmup_seconds": round(self.finished_at - self.started_at, 2)
            if self.finished_at
            else None,
        }


READINESS = Readiness()


def warmup_run(
    *,
    roles: list[str] | None = None,
    requests: int | None = None,
    preload: Sequence[Callable[[], object]] = (),
) -> Readiness:
    """Load and warm every role's backend; idempotent per process.

    ``preload``: what the layers above want loaded before the first shopper's turn
    (the router's classifier); they pass it in, so inference imports none of them."""
    state = READINESS
    if state.ready.is_set():
        return state
    state.started_at = time.perf_counter()
    count = settings.TIERDESK_WARMUP_REQUESTS if requests is None else requests
    done: set[str] = set()
    try:
        for load in preload:
            state.stage = f"preloading {getattr(load, '__name__', 'data')}"
            load()
        if roles is None and settings.TIERDESK_L1_COMPRESSION:
            # spaCy + jieba load in ~3 s: not in the first L1 turn either.
            from inference.compress import compress_warm_up

            state.stage = "loading spaCy and jieba"
            compress_warm_up()
        for role in roles if roles is not None else settings.TIERDESK_WARM_ROLES:
            real = resolve_role(role)
            if real in done:
                continue
            done.add(real)
            state.stage = f"loading the {real} model"
            backend = get_backend(real)
            if getattr(backend, "model_server", False):
                state.stage = f"waiting for the model server ({real})"
                model_server_wait(backend)
            backend.load()
            chat = bool(getattr(backend, "chat", False))
            for i in range(count):
                state.stage = f"warming up the {real} model ({i + 1}/{count})"
                tokens = WARMUP_TOKENS[i % len(WARMUP_TOKENS)]
                text = "Warm-up: say hello to a shopper."
                request = (
                    GenerationRequest(messages=(ChatMessage("user", text),), max_tokens=tokens)
                    if chat
                    else GenerationRequest(prompt=text + "\nReply:", max_tokens=tokens)
                )
                for _chunk in backend.stream(request):
                    pass
                state.requests += 1
            state.roles.append(real)
    except Exception as exc:
        # Not ready, and say why: /readyz shows the error (a missing model file, say).
        state.error = str(exc)
        state.stage = "failed"
        logger.exception("warm-up failed")
        return state
    state.finished_at = time.perf_counter()
    state.stage = "ready"
    state.ready.set()
    logger.info("warm-up done: %s", state.as_dict())
    return state


MODEL_SERVER_WAIT_S = 600.0


def model_server_wait(backend: object, timeout_s: float = MODEL_SERVER_WAIT_S) -> None:
    """Until the role's model server answers /health (it may still be loading: under
    systemd or compose the web process can start first). Raises after ``timeout_s``."""
    import httpx

    root = str(getattr(backend, "api_base", "")).removesuffix("/v1")
    deadline = time.monotonic() + timeout_s
    last = ""
    while time.monotonic() < deadline:
        try:
            response = httpx.get(root + "/health", timeout=2.0, trust_env=False)
            if response.status_code == 200:
                return
            last = f"HTTP {response.status_code}"
        except httpx.HTTPError as exc:
            last = f"{type(exc).__name__}: {exc}"
        time.sleep(0.5)
    raise RuntimeError(f"model server {root} not answering after {timeout_s:.0f}s ({last})")


def warmup_start_background(*, preload: Sequence[Callable[[], object]] = ()) -> None:
    threading.Thread(
        target=warmup_run, kwargs={"preload": preload}, name="warmup", daemon=True
    ).start()
