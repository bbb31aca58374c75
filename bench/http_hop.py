"""What the model server's HTTP hop costs an L1 first token (issue #16, first-chunk overhead).

``make bench`` puts Tierdesk's first chunk beside bare llama.cpp's first token, and the
gap (+39 to +60 ms at p50 at 1 session) could be the models' move out of the web
process: the request now crosses llama.cpp's HTTP listener. This measures that hop
alone. One ``xllamacpp.Server`` with the fast role's parameters
(``inference.backends.llamacpp.server_params``) is called, alternately and one request
at a time, in-process (``handle_completions``, what the bench's bare side does) and over
its own HTTP listener through the production client (``OpenAIBackend.astream``), and
through the same client while the admission probe (``/slots`` and ``/metrics``) runs
beside the request, as it does at the start of a turn. Prompts are L1-shaped (a fixed
instruction prefix, a facts line that changes), the same prompt on both sides of each
pair, so both find the same prefix in the cache.

``.venv/bin/python -m bench.http_hop [--pairs 30] [--out bench/results/http_hop.json]``
(heavy: loads the fast model; about a minute).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import threading
import time
from pathlib import Path
from typing import Any

RESULTS = Path("bench/results/http_hop.json")
PREFIX = (
    "You are a shop assistant. Answer the customer in one or two short sentences using "
    "only the facts.\n"
)


def prompt(i: int) -> str:
    return (
        PREFIX + f"Facts: order A{1000 + i} shipped on Nov {i % 28 + 1} with UPS, tracking "
        f"1Z{i:06d}, arriving Dec {i % 20 + 3}.\nCustomer: where is my order A{1000 + i}?\n"
        "Reply:"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=30)
    parser.add_argument("--port", type=int, default=18299)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    import httpx
    import xllamacpp as xlc
    from django.conf import settings

    from inference.backends.llamacpp import server_params
    from inference.backends.openai import OpenAIBackend
    from inference.base import GenerationRequest
    from inference.catalog import resolve_model_file

    config = dict(settings.LOCAL_MODELS["fast"]["CONFIG"])
    path, _sha = resolve_model_file(
        model=str(config.get("model", "")),
        path=str(config.get("path", "")),
        sha256=str(config.get("sha256", "")),
        model_dir=settings.TIERDESK_MODEL_DIR,
    )
    server = xlc.Server(server_params(config, path, port=args.port))
    address = str(server.listening_address)
    backend = OpenAIBackend(
        "fast",
        {"api_base": address + "/v1", "model": "gemma3-270m-q4km", "model_server": True},
    )
    probe_client = httpx.Client(base_url=address, timeout=2)

    def in_process(text: str) -> float:
        first: list[float] = []
        started = time.perf_counter()

        def on_chunk(data: Any) -> bool:
            choices = data.get("choices") or []
            if not first and choices and str(choices[0].get("text") or "").strip():
                first.append(time.perf_counter())
            return False

        server.handle_completions(
            {"prompt": text, "stream": True, "max_tokens": 20, "temperature": 0.2}, on_chunk
        )
        return (first[0] - started) * 1000

    async def over_http(text: str, probe: bool) -> float:
        prober = None
        if probe:  # what admission control's slot probe does beside a turn's request
            prober = threading.Thread(
                target=lambda: (probe_client.get("/slots"), probe_client.get("/metrics"))
            )
            prober.start()
        started = time.perf_counter()
        first = None
        request = GenerationRequest(prompt=text, max_tokens=20, temperature=0.2)
        async for chunk in backend.astream(request):
            if first is None and chunk.text.strip():
                first = time.perf_counter()
        if prober is not None:
            prober.join()
        assert first is not None
        return (first - started) * 1000

    async def run() -> dict[str, list[float]]:
        for i in range(3):  # warm the prefix and the connection
            in_process(prompt(i))
            await over_http(prompt(i), False)
        times: dict[str, list[float]] = {"in_process": [], "http": [], "http_probe": []}
        for i in range(args.pairs):
            text = prompt(100 + i)
            # Each side gets the prompt first half of the time (the second finds it cached).
            sides = ["in_process", "http", "http_probe"]
            order = sides[i % 3 :] + sides[: i % 3]
            for k, side in enumerate(order):
                variant = text + " " * k  # the same tokens up to the end; no exact repeat
                if side == "in_process":
                    times[side].append(in_process(variant))
                else:
                    times[side].append(await over_http(variant, side == "http_probe"))
        return times

    started = time.time()
    times = asyncio.run(run())
    p50 = {k: round(statistics.median(v), 1) for k, v in times.items()}
    result = {
        "benchmark": "http_hop",
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "command": "python -m bench.http_hop",
        "machine": {"nproc": os.cpu_count(), "loadavg": os.getloadavg()},
        "config": {"pairs": args.pairs, "model_file": path.name, "max_tokens": 20},
        "figures": {
            "first_token_p50_ms_in_process": p50["in_process"],
            "first_token_p50_ms_http": p50["http"],
            "first_token_p50_ms_http_with_slot_probe": p50["http_probe"],
            "http_hop_p50_ms": round(p50["http"] - p50["in_process"], 1),
            "slot_probe_p50_ms": round(p50["http_probe"] - p50["http"], 1),
        },
        "samples_ms": {k: [round(x, 1) for x in v] for k, v in times.items()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result["figures"]))
    server = None  # the listener stops with the process
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
