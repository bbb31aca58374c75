"""Where one L1 turn's time goes, stage by stage (issue #16: first-chunk overhead).

One shopper at a time, through the real ASGI application in this process (consumer,
receive, turn, answerers, guards) with the models in the model server, as production
runs them. Each stage is timed by wrapping the function that does it, relative to the
moment the message frame is sent:

- ``receive``: the message frame to the ack (bot check, store, handoff status, limits);
- ``plan``: ``services.turn_plan`` in its thread, with its parts: ``route`` (the router),
  ``knowledge`` (knowledge-aware routing), ``prompt`` (the L1 prompt, with ``compress``,
  its compression); the rest of ``plan`` is the conversation's state, the order's facts
  and the reply row;
- ``model_open``: the model call starts (``base.model_answer``), then the queue slot;
- ``model_first``: the first token arrives from the model server;
- ``first_chunk``: the first chunk frame reaches the shopper (the fact guard holds a
  token that may still grow);
- ``bare_first``: the same prompt straight to the model server's ``/v1/completions``
  (stream), right after: what the model alone takes to its first token.

``--l2 N`` also sends N knowledge questions the router gives L2 (bench/load.py's pool),
in a conversation of their own, with ``kb_plan`` (``knowledge.answer.answer_plan``:
cards, retrieval, the prompt) as their planning part; their ``first_chunk`` comes after
the entailment guard has checked the first sentence. Their p50s are under ``L2``.

Run: ``.venv/bin/python -m bench.l1_profile`` (the bench database must be seeded, as
``make bench`` does). Prints a table of p50s; ``--out`` also writes JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from pathlib import Path
from typing import Any

from bench import l1

PROFILE_PORT = 18270
STAGES = (
    "receive",
    "plan",
    "route",
    "knowledge",
    "prompt",
    "compress",
    "kb_plan",
    "model_open",
    "slot_ask",
    "slot",
    "request",
    "model_first",
    "first_chunk",
    "done",
)


class Clock:
    """Stage marks of the current turn, in ms since the frame was sent."""

    def __init__(self) -> None:
        self.t0 = 0.0
        self.marks: dict[str, float] = {}
        self.spans: dict[str, float] = defaultdict(float)

    def start(self) -> None:
        self.t0 = time.perf_counter()
        self.marks, self.spans = {}, defaultdict(float)

    def mark(self, name: str) -> None:
        self.marks.setdefault(name, (time.perf_counter() - self.t0) * 1000)

    def span(self, name: str, func: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return func(*args, **kwargs)
            finally:
                self.spans[name] += (time.perf_counter() - started) * 1000

        return timed


CLOCK = Clock()


def instrument() -> None:
    """Wrap the functions each stage runs (by the names their callers use)."""
    from chatbot import dialogue, services
    from chatbot.answerers import base
    from chatbot.answerers import l1 as l1_answerer
    from inference import prompts, resilience

    services.turn_plan = CLOCK.span("plan", services.turn_plan)
    dialogue.route_message = CLOCK.span("route", dialogue.route_message)
    dialogue.knowledge_route = CLOCK.span("knowledge", dialogue.knowledge_route)
    l1_answerer.l1_prompt = CLOCK.span("prompt", l1_answerer.l1_prompt)
    from knowledge import answer as kb_answer

    # The L2 answerer imports it when it plans: patched on its module.
    kb_answer.answer_plan = CLOCK.span("kb_plan", kb_answer.answer_plan)
    prompts.l1_question_compressed = CLOCK.span("compress", prompts.l1_question_compressed)
    original_backend = base.get_backend

    def backend(role: str) -> Any:
        CLOCK.mark("model_open")  # model_answer's first step
        return original_backend(role)

    base.get_backend = backend
    from inference import queue as model_queue

    original_slot = model_queue.model_slot

    @contextlib.asynccontextmanager
    async def slot(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        CLOCK.mark("slot_ask")
        async with original_slot(*args, **kwargs) as waited:
            CLOCK.mark("slot")
            yield waited

    model_queue.model_slot = slot
    original_open = resilience._open

    async def opened(*args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        CLOCK.mark("request")
        async for chunk in original_open(*args, **kwargs):
            if chunk.text:
                CLOCK.mark("model_first")
            yield chunk

    resilience._open = opened


async def bare_first_ms(prompt: str, max_tokens: int, port: int) -> float:
    """The model server's own first token for ``prompt`` (streamed completion)."""
    import httpx

    body = {
        "prompt": prompt,
        "max_tokens": max_tokens,
        "temperature": 0.2,
        "stream": True,
        "stop": ["\n"],
        "cache_prompt": True,
    }
    async with httpx.AsyncClient(timeout=60, trust_env=False) as client:
        started = time.perf_counter()
        async with client.stream(
            "POST", f"http://127.0.0.1:{port}/v1/completions", json=body
        ) as response:
            async for line in response.aiter_lines():
                if line.startswith("data: ") and '"text":"' in line and '"text":""' not in line:
                    return (time.perf_counter() - started) * 1000
    return float("nan")


def variant(prompt: str) -> str:
    """``prompt`` with the digits of its last "Facts:" line rotated (same token shapes)."""
    head, sep, tail = prompt.rpartition("Facts:")
    rotated = "".join(str((int(c) + 3) % 10) if c.isdigit() else c for c in tail)
    return head + sep + rotated


async def profile(convs: list[l1.Conv], port: int) -> list[dict[str, Any]]:
    from channels.testing import WebsocketCommunicator

    from config.asgi import application

    rows = []
    for conv in convs:
        comm = WebsocketCommunicator(
            application, "/ws/chat/", headers=[(b"origin", b"http://localhost")]
        )
        await comm.connect(timeout=30)
        await comm.receive_json_from(timeout=30)  # hello
        await comm.send_json_to({"type": "identify", "token": conv.token})
        await comm.receive_json_from(timeout=30)
        for index, msg in enumerate(conv.messages):
            bare = None
            if msg.prompt and msg.tier == "L1":
                # The same prompt with other digits in the question's facts, sent first:
                # the same uncached work as ours, which then finds its prefix as warm.
                bare = await bare_first_ms(variant(msg.prompt), msg.max_tokens, port)
            CLOCK.start()
            await comm.send_json_to({"type": "message", "id": f"p{index}", "text": msg.text})
            while True:
                frame = await comm.receive_json_from(timeout=60)
                if frame["type"] == "ack":
                    CLOCK.mark("receive")
                elif frame["type"] in ("chunk", "replace"):
                    CLOCK.mark("first_chunk")
                elif frame["type"] in ("done", "error"):
                    CLOCK.mark("done")
                    break
            row: dict[str, Any] = {
                "text": msg.text,
                "tier": frame.get("tier"),
                "guard": frame.get("guard"),
                **{k: round(v, 1) for k, v in CLOCK.marks.items()},
                **{f"{k}_ms": round(v, 1) for k, v in CLOCK.spans.items()},
            }
            if bare is not None and frame.get("model"):
                row["bare_first"] = round(bare, 1)
            rows.append(row)
        await comm.disconnect()
    return rows


def summary(rows: list[dict[str, Any]], skip: int) -> dict[str, float]:
    model_rows = [r for r in rows[skip:] if "model_first" in r]
    keys = [
        *STAGES,
        "bare_first",
        *[f"{k}_ms" for k in ("plan", "route", "knowledge", "prompt", "compress", "kb_plan")],
    ]
    out = {}
    for key in keys:
        values = [r[key] for r in model_rows if key in r]
        if values:
            out[key] = round(statistics.median(values), 1)
    if "first_chunk" in out and "bare_first" in out:
        out["overhead_p50"] = round(out["first_chunk"] - out["bare_first"], 1)
    out["turns"] = len(model_rows)
    return out


def figures_flat(result: dict[str, Any]) -> dict[str, float]:
    """The p50s as one flat object (bench/results convention): ``l1_<stage>_p50_ms``,
    ``l2_<stage>_p50_ms``, the L1 overhead over bare and the load average."""
    out: dict[str, float] = {}
    for tier, stages in (("l1", result["p50_ms"]), ("l2", result.get("L2", {}))):
        for key, value in stages.items():
            name = key.removesuffix("_ms").removesuffix("_p50")
            out[f"{tier}_turns" if key == "turns" else f"{tier}_{name}_p50_ms"] = value
    out["load1"] = round(float(result["load1"]), 2)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--conversations", type=int, default=3)
    parser.add_argument("--messages", type=int, default=6, help="per conversation")
    parser.add_argument("--skip", type=int, default=2, help="first turns left out (warm-up)")
    parser.add_argument("--port", type=int, default=PROFILE_PORT)
    parser.add_argument("--no-model-server", action="store_true", help="one is on --port")
    parser.add_argument("--l2", type=int, default=0, help="L2 questions after the L1 turns")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    l1.MODELS.update(mode="server", port=args.port)
    env = l1.bench_env(warmup=False)
    os.environ.update(env)
    sys.path.insert(0, str(l1.ROOT))
    l1.redis_flush(env["REDIS_URL"])

    import django

    django.setup()
    scenario = l1.scenarios_build(
        seed=11, c1_convs=args.conversations, c1_msgs=args.messages, sessions=0, msgs=0
    )[0]
    convs = [conv for lane in scenario.lanes for conv in lane]
    l1.prompts_plan([scenario])  # each message's prompt, for the bare comparison
    if args.l2:
        from bench.load import message_pools

        pool = message_pools()["L2"]
        extra = l1.scenarios_build(seed=12, c1_convs=1, c1_msgs=1, sessions=0, msgs=0)[0]
        conv = extra.lanes[0][0]
        # Spread over the pool (it is in file order: topics and languages in runs).
        step = max(1, len(pool) // args.l2)
        conv.messages = [
            l1.Msg(kind=intent, text=text, tier="L2") for intent, text in pool[::step][: args.l2]
        ]
        convs.append(conv)
    # That planned every message once: forget the per-text caches it filled (the
    # message's embedding, its compression), so each turn does the work a new message does.
    from inference.compress import _compress_cached
    from knowledge import embedding

    _compress_cached.cache_clear()
    embedding._query_cache.clear()
    server = None if args.no_model_server else l1.ModelServerProc(args.port)
    if server is not None:
        l1.log(f"starting the model server on 127.0.0.1:{args.port}...")
        server.start()
        server.wait_ready()
        l1.log(f"model server ready in {server.ready_s:.1f}s")
    try:
        instrument()
        rows = asyncio.run(profile(convs, args.port))
    finally:
        if server is not None:
            server.stop()
    l1_rows = [r for r in rows if r.get("tier") == "L1"]
    l2_rows = [r for r in rows if r.get("tier") == "L2"]
    result = {
        "rows": rows,
        "p50_ms": summary(l1_rows, args.skip),
        "load1": os.getloadavg()[0],
    }
    if l2_rows:
        result["L2"] = summary(l2_rows, 0)
    result["figures"] = figures_flat(result)
    for row in rows:
        print(json.dumps(row, ensure_ascii=False))
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}, indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
