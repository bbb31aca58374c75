"""The fast model's first token beside the other work on the 2 cores (issue #16).

Why do L1 replies miss their 400 ms budget at 5 sessions, when one shopper alone gets a
first chunk in ~135 ms (``make bench``)? In ``make load`` the fast model shares the
cores with the fallback model (L2 prompts of ~400 tokens, and L3's second queue), with
Daphne's planning (Python, nice 0, while the model server runs at nice 10) and with the
L3 stand-in. llama.cpp's threads meet at a barrier after every operation and spin while
they wait, so a model whose two threads share the cores with other busy threads runs at
the pace of its slowest thread.

This loads the fast (Gemma 3 270M) and fallback (Qwen2.5 0.5B) models in this process,
each from a thread with the priority the model server would give it, as the model
server configures them (``inference.backends.llamacpp.server_params``), and times the
fast model's first token for L1-shaped prompts (a cached few-shot prefix, ~30 new
tokens): alone, beside the fallback model reading L2-shaped prompts, beside a Python
process spinning on one core at a higher priority (Daphne planning), and beside both.
Each layout (threads per role, nice or SCHED_IDLE for the fallback) is one row. The
fallback's own prompt tokens/s beside the fast model shows what each layout costs L2.

Heavy (loads the models once per layout, ~3 minutes):
``.venv/bin/python -m bench.l1_contention [--layouts a,b] [--requests 12]``; prints
one JSON line per layout and scenario, and writes ``--out`` if given.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench import l1

# name: (fast threads, fallback threads, fallback priority: a nice step or "idle")
LAYOUTS: dict[str, tuple[int, int, int | str]] = {
    "now": (2, 2, 5),
    "fallback_1_thread": (2, 1, 5),
    "fallback_idle": (2, 2, "idle"),
    "fallback_1_thread_idle": (2, 1, "idle"),
    "fast_1_fallback_1": (1, 1, 5),
}
# The model server runs 10 steps nicer than the web tier in make load (bench/load.py).
MODEL_NICE = 10
SCENARIOS = ("alone", "fallback_busy", "daphne_busy", "both_busy")

PREFIX = (
    "You are the order assistant of an online shop. Rewrite the facts as one friendly "
    "sentence for the shopper. Copy every order id, date, amount and carrier exactly.\n\n"
    "Facts: order #W1234567; status shipped; carrier UPS; estimated delivery 2026-12-05.\n"
    "Question: where is my order #W1234567?\n"
    "Reply: Your order #W1234567 has shipped with UPS and should arrive on 2026-12-05.\n\n"
    "Facts: order #W7654321; status processing; estimated delivery 2026-12-09.\n"
    "Question: when will order #W7654321 arrive?\n"
    "Reply: Your order #W7654321 is being prepared and should arrive on 2026-12-09.\n\n"
)
PASSAGE = (
    "Returns are accepted within 30 days of delivery for unworn items with their tags on; "
    "sale items are final sale and can't be returned, and gift cards can't be returned "
    "either."
)


def l1_prompt(i: int) -> str:
    order = f"#W{2600000 + 7919 * i % 400000:07d}"
    day = 3 + i % 20
    return (
        f"{PREFIX}Facts: order {order}; status shipped; carrier FedEx; estimated delivery "
        f"2026-12-{day:02d}.\nQuestion: where is my order {order}?\nReply:"
    )


def l2_messages(i: int) -> list[dict[str, str]]:
    text = f"Passages:\n{' '.join([PASSAGE] * 9)}\n\nQuestion ({i}): can I return a sale item?"
    return [
        {"role": "system", "content": "You are the customer-service assistant of a shop."},
        {"role": "user", "content": text},
    ]


def thread_priority(nice: int | str) -> None:
    """This thread (and the threads it starts) ``nice`` steps nicer, or SCHED_IDLE."""
    tid = threading.get_native_id()
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + MODEL_NICE)
        if nice == "idle":
            os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
        else:
            os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + int(nice))


def server_load(role: str, threads: int, nice: int | str) -> Any:
    import xllamacpp as xlc
    from django.conf import settings

    from inference.backends.llamacpp import server_params
    from inference.catalog import resolve_model_file

    config = dict(settings.LOCAL_MODELS[role]["CONFIG"])
    config["threads"] = threads
    path, _ = resolve_model_file(
        model=config["model"],
        path=str(config.get("path", "")),
        sha256=str(config.get("sha256", "")),
        model_dir=settings.TIERDESK_MODEL_DIR,
    )
    out: list[Any] = []

    def load() -> None:
        thread_priority(nice)
        out.append(xlc.Server(server_params(config, path)))

    loader = threading.Thread(target=load)
    loader.start()
    loader.join()
    return out[0]


def timed(server: Any, payload: dict[str, Any], *, chat: bool) -> dict[str, Any]:
    """One streamed request: first-token ms and llama.cpp's own timings."""
    started = time.perf_counter()
    first: list[float] = []
    timings: dict[str, Any] = {}

    def on_chunk(data: Any) -> bool:
        if not first and data.get("choices"):
            choice = data["choices"][0]
            text = (choice.get("delta") or {}).get("content") if chat else choice.get("text")
            if text:
                first.append((time.perf_counter() - started) * 1000)
        if data.get("timings"):
            timings.update(data["timings"])
        return False

    handler = server.handle_chat_completions if chat else server.handle_completions
    handler({**payload, "stream": True}, on_chunk)
    return {
        "first_ms": first[0] if first else None,
        "prompt_n": timings.get("prompt_n"),
        "prompt_tok_s": timings.get("prompt_per_second"),
        "decode_tok_s": timings.get("predicted_per_second"),
    }


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))], 1)


def scenario_run(
    fast: Any, fallback: Any, scenario: str, *, requests: int, offset: int
) -> dict[str, Any]:
    stop = threading.Event()
    l2_rows: list[dict[str, Any]] = []

    def l2_loop() -> None:
        i = 0
        while not stop.is_set():
            payload = {"messages": l2_messages(offset + i), "max_tokens": 8, "cache_prompt": False}
            l2_rows.append(timed(fallback, payload, chat=True))
            i += 1

    hog: subprocess.Popen[bytes] | None = None
    l2: threading.Thread | None = None
    if scenario in ("daphne_busy", "both_busy"):
        # One core of Python at the web tier's priority, as Daphne planning turns.
        hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    if scenario in ("fallback_busy", "both_busy"):
        l2 = threading.Thread(target=l2_loop, daemon=True)
        l2.start()
        time.sleep(0.5)  # the fallback is reading its first prompt
    rows: list[dict[str, Any]] = []
    try:
        for i in range(requests):
            payload = {"prompt": l1_prompt(offset + i), "max_tokens": 24, "stop": ["\n"]}
            rows.append(timed(fast, payload, chat=False))
            time.sleep(0.15)
    finally:
        stop.set()
        if hog is not None:
            hog.kill()
            hog.wait()
        if l2 is not None:
            l2.join(timeout=60)
    firsts = [r["first_ms"] for r in rows if r["first_ms"] is not None]
    decode = [r["decode_tok_s"] for r in rows if r["decode_tok_s"]]
    l2_speed = [r["prompt_tok_s"] for r in l2_rows if r["prompt_tok_s"]]
    return {
        "scenario": scenario,
        "requests": len(rows),
        "first_token_ms_p50": pct(firsts, 50),
        "first_token_ms_p95": pct(firsts, 95),
        "first_token_ms_max": round(max(firsts), 1) if firsts else None,
        "over_280_ms": sum(1 for f in firsts if f > 280),
        "prompt_tokens_processed_mean": round(
            statistics.mean([r["prompt_n"] for r in rows if r["prompt_n"] is not None]), 1
        )
        if rows
        else None,
        "decode_tok_s_p50": pct(decode, 50),
        "fallback_prompts": len(l2_rows),
        "fallback_prompt_tok_s_p50": pct(l2_speed, 50),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--layouts", default=",".join(LAYOUTS))
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--requests", type=int, default=12)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    os.environ.update(l1.bench_env(warmup=False))
    import django

    django.setup()
    results: list[dict[str, Any]] = []
    for name in args.layouts.split(","):
        fast_threads, fallback_threads, fallback_nice = LAYOUTS[name]
        fast = server_load("fast", fast_threads, 0)
        fallback = server_load("fallback", fallback_threads, fallback_nice)
        # Prompt-cache the few-shot prefix, and let both engines allocate.
        for i in range(3):
            timed(fast, {"prompt": l1_prompt(900 + i), "max_tokens": 4}, chat=False)
        timed(fallback, {"messages": l2_messages(900), "max_tokens": 2}, chat=True)
        for k, scenario in enumerate(args.scenarios.split(",")):
            row = {
                "layout": name,
                "fast_threads": fast_threads,
                "fallback_threads": fallback_threads,
                "fallback_priority": fallback_nice,
                **scenario_run(fast, fallback, scenario, requests=args.requests, offset=100 * k),
                "load1": round(os.getloadavg()[0], 2),
            }
            print(json.dumps(row), flush=True)
            results.append(row)
        del fast, fallback
    if args.out is not None:
        args.out.write_text(
            json.dumps(
                {
                    "benchmark": "l1_contention",
                    "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "git_commit": l1.git_commit(),
                    "command": " ".join(["python -m bench.l1_contention", *(argv or sys.argv[1:])]),
                    "rows": results,
                },
                indent=2,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
