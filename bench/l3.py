"""L3 benchmark: the remote client, the timeout fallback and the breaker-open path.

Run: ``.venv/bin/python -m bench.l3`` (talks to 127.0.0.1 only, fixed request counts,
every wait bounded; about 2-4 minutes on 2 cores). Figures go to bench/results/l3.json.

1. **Client overhead.** The real local fallback model (Qwen2.5-Coder-0.5B) is served
   by xllamacpp's OpenAI-compatible HTTP listener. The same chat request is sent N
   times directly (httpx, reading the SSE stream to ``[DONE]``) and N times through
   ``OpenAIBackend.astream``, alternating A/B and B/A so machine noise hits both. The
   figure is median(client) / median(direct), total request time (target <= 1.05).
2. **L3 hangs.** A second xllamacpp server runs in a subprocess and is stopped with
   SIGSTOP: it accepts connections and never answers. Each request goes through
   ``large_stream`` (500 ms first-token threshold, 150 ms hedge) and the time from the
   request to the first fallback token is recorded (target p95 <= 600 ms).
3. **Breaker open.** The shared breaker (Redis db 2, a prefix of its own) is opened;
   the time from the request to the first fallback token is recorded (target p95 <=
   150 ms). The fallback model's own first-token time, measured in the same loop, is
   the floor both fallback figures stand on.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "l3.json"


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def summary(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "p50_ms": round(statistics.median(values), 1),
        "p95_ms": round(p95(values), 1),
        "max_ms": round(max(values), 1),
    }


def setup_django(redis_url: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["TIERDESK_WARMUP_ON_START"] = "false"
    os.environ["TIERDESK_STATE_REDIS_URL"] = redis_url
    os.environ["TIERDESK_STATE_PREFIX"] = f"bench-l3-{uuid.uuid4().hex[:8]}"
    # Once opened, the breaker stays open for the whole breaker-open phase.
    os.environ["TIERDESK_BREAKER_OPEN_S"] = "3600"
    import django

    django.setup()


async def run(args: argparse.Namespace) -> dict[str, Any]:
    import httpx
    from django.conf import settings

    from inference import registry
    from inference.aio import astream
    from inference.backends.openai import OpenAIBackend
    from inference.base import ChatMessage, GenerationRequest
    from inference.breaker import breaker_for
    from inference.resilience import StreamInfo, large_stream, request_prepare

    fallback = registry.get_backend("fallback")
    started = time.perf_counter()
    await asyncio.get_running_loop().run_in_executor(None, fallback.load)
    load_s = time.perf_counter() - started
    url = str(getattr(fallback, "listening_address", ""))
    question = GenerationRequest(
        messages=(
            ChatMessage("system", "You are the assistant of an online shop. Be brief."),
            ChatMessage("user", "Which is better for hiking, boots or trail shoes?"),
        ),
        max_tokens=args.tokens,
        temperature=0.0,
        seed=7,
    )
    question = request_prepare(question)  # as the turn sends it (canary, sanitized)

    # -- 1. client overhead ----------------------------------------------------------------
    client = OpenAIBackend("large", {"api_base": url, "model": "bench"})
    body = {
        "model": "bench",
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": question.max_tokens,
        "temperature": question.temperature,
        "seed": question.seed,
        "messages": [{"role": m.role, "content": m.content} for m in question.messages or ()],
    }
    direct_http = httpx.AsyncClient(base_url=url + "/v1", timeout=60)

    async def direct() -> tuple[float, float]:
        t0 = time.perf_counter()
        first = 0.0
        async with direct_http.stream("POST", "/chat/completions", json=body) as response:
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    payload = line[5:].strip()
                    if payload == "[DONE]":
                        break
                    event = json.loads(payload)
                    choices = event.get("choices") or []
                    if not first and choices and (choices[0].get("delta") or {}).get("content"):
                        first = time.perf_counter() - t0
        return (time.perf_counter() - t0) * 1000, first * 1000

    async def via_client() -> tuple[float, float]:
        t0 = time.perf_counter()
        first = 0.0
        async for chunk in client.astream(question):
            if chunk.text and not first:
                first = time.perf_counter() - t0
        return (time.perf_counter() - t0) * 1000, first * 1000

    for _ in range(2):  # warm both paths (and the prompt cache)
        await direct()
        await via_client()
    d_total: list[float] = []
    c_total: list[float] = []
    d_first: list[float] = []
    c_first: list[float] = []
    for i in range(args.n):
        order = (direct, via_client) if i % 2 == 0 else (via_client, direct)
        for fn in order:
            total, first = await fn()
            (d_total if fn is direct else c_total).append(total)
            (d_first if fn is direct else c_first).append(first)
    overhead: dict[str, Any] = {
        "direct_total": summary(d_total),
        "client_total": summary(c_total),
        "direct_first_token": summary(d_first),
        "client_first_token": summary(c_first),
        "ratio_total_median": round(statistics.median(c_total) / statistics.median(d_total), 4),
        "ratio_first_token_median": round(
            statistics.median(c_first) / statistics.median(d_first), 4
        ),
        "target_ratio": 1.05,
    }
    overhead["pass"] = overhead["ratio_total_median"] <= 1.05
    await direct_http.aclose()
    client.close()

    # -- the fallback's own first token (the floor) ----------------------------------------
    async def fallback_first() -> float:
        t0 = time.perf_counter()
        gen: Any = astream(fallback, question)
        try:
            async for chunk in gen:
                if chunk.text:
                    return (time.perf_counter() - t0) * 1000
        finally:
            await gen.aclose()
        return (time.perf_counter() - t0) * 1000

    # -- 2. L3 hangs -----------------------------------------------------------------------
    proc = args.hung_proc
    hang_first: list[float] = []
    floor: list[float] = []
    reasons: set[str] = set()
    try:
        assert proc.stdout is not None
        readline = proc.stdout.readline
        hung_url = (await asyncio.get_running_loop().run_in_executor(None, readline)).strip()
        os.kill(proc.pid, 19)  # SIGSTOP: accepts connections, never answers
        hung = OpenAIBackend("large", {"api_base": hung_url, "model": "hung"})
        registry.register("large", hung)

        async def first_token(gen: Any, t0: float) -> float:
            try:
                async for chunk in gen:
                    if chunk.text:
                        return (time.perf_counter() - t0) * 1000
            finally:
                await gen.aclose()
            return (time.perf_counter() - t0) * 1000

        for _ in range(args.n):
            floor.append(await fallback_first())
            # Timeouts count for the breaker: after 5 it would open and the next samples
            # would measure the breaker-open path. Start each sample closed.
            await breaker_for("large").reset()
            info = StreamInfo()
            t0 = time.perf_counter()
            hang_first.append(await first_token(large_stream(question, info=info), t0))
            reasons.add(str((info.fallback or {}).get("reason")))
        hung.close()
    finally:
        os.kill(proc.pid, 9)

    # -- 3. breaker open -------------------------------------------------------------------
    breaker = breaker_for("large")
    permit = await breaker.allow()
    for _ in range(settings.TIERDESK_BREAKER_ERROR_LIMIT):
        await breaker.record_failure(permit)
    open_first: list[float] = []
    open_reasons: set[str] = set()
    open_floor: list[float] = []
    for _ in range(args.n):
        open_floor.append(await fallback_first())
        info = StreamInfo()
        t0 = time.perf_counter()
        open_first.append(await first_token(large_stream(question, info=info), t0))
        open_reasons.add(str((info.fallback or {}).get("reason")))
    await breaker.reset()
    registry.unregister("large")

    hang: dict[str, Any] = {**summary(hang_first), "reasons": sorted(reasons)}
    hang |= {"target_p95_ms": 600, "pass": hang["p95_ms"] <= 600}
    opened: dict[str, Any] = {**summary(open_first), "reasons": sorted(open_reasons)}
    opened |= {"target_p95_ms": 150, "pass": opened["p95_ms"] <= 150}
    return {
        "benchmark": "l3",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "loadavg_at_end": [round(x, 2) for x in os.getloadavg()],
        },
        "setup": {
            "model": fallback.model_id,
            "model_load_s": round(load_s, 2),
            "max_tokens": args.tokens,
            "requests_per_figure": args.n,
            "first_token_timeout_ms": settings.TIERDESK_L3_FIRST_TOKEN_TIMEOUT_MS,
            "hedge_ms": settings.TIERDESK_L3_HEDGE_MS,
            "breaker_store": "redis" if settings.TIERDESK_STATE_REDIS_URL else "local",
        },
        "client_overhead": overhead,
        "fallback_first_token_floor": summary(floor + open_floor),
        "l3_hangs_first_fallback_token": hang,
        "breaker_open_first_fallback_token": opened,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20, help="requests per figure")
    parser.add_argument("--tokens", type=int, default=16, help="max tokens per reply")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/2")
    args = parser.parse_args()
    setup_django(args.redis)
    from django.conf import settings

    from inference.catalog import CATALOG

    model = settings.TIERDESK_MODEL_DIR / CATALOG["qwen2.5-coder-0.5b-instruct-q4km"].filename
    # A second llama.cpp server that will hang (SIGSTOP); it stops itself after 600 s.
    args.hung_proc = subprocess.Popen(
        [sys.executable, "-m", "tests.inference.serve_model", str(model), "1", "600"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        result = asyncio.run(asyncio.wait_for(run(args), timeout=1200))
    finally:
        if args.hung_proc.poll() is None:
            args.hung_proc.kill()
        args.hung_proc.wait(timeout=10)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2), flush=True)
    # llama.cpp's threads can abort the interpreter's teardown; the figures are written.
    os._exit(0)


if __name__ == "__main__":
    main()
