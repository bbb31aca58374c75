"""L1 benchmark: real WebSocket shoppers against a production-shaped server, side by
side with bare llama.cpp on the same model, prompts and thread count.

Run it with ``make bench`` (or ``bash scripts/bench.sh``); figures go to
``bench/results/l1.json`` and docs/benchmarks.md explains each one.

What happens, in order:

1. The bench database (PostgreSQL, ``tierdesk_bench``) is created if missing, migrated
   and seeded; the bench's Redis database (number 2) is flushed so no rate-limit,
   breaker or cache state from an earlier run leaks in.
2. In this process: shopper scripts are built from real orders, each message is planned
   with ``chatbot.dialogue.Dialogue`` (the exact prompt the server builds), and the
   router's decision time is measured.
3. Bare llama.cpp (``xllamacpp.Server``, same GGUF, threads, slots, ``swa_full`` and
   ``cache_prompt`` as the fast backend) is loaded here and warmed up.
4. Daphne starts as a subprocess and is waited on until ``/readyz`` says 200.
5. For 1 and then 20 concurrent sessions: bare llama.cpp replays the prompts while
   Daphne is idle, then WebSocket shoppers send the same messages while the bare
   engine is idle. The two never compete for the 2 cores, and each pair runs back to
   back so machine noise hits both about equally.
6. Daphne is stopped; the figures and target verdicts are written and printed.

Everything talks to 127.0.0.1 only, every wait is bounded, and the message counts are
fixed, so the run stops by itself (about 3-5 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import platform
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from tests.net import free_port

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "l1.json"
DAPHNE_LOG = ROOT / "var" / "log" / "bench-daphne.log"
MODELSERVER_LOG = ROOT / "var" / "log" / "bench-modelserver.log"
# Ready when this exists (bench/load.py points it elsewhere: both may run at once).
MODELSERVER_STATUS = ROOT / "var" / "run" / "bench-modelserver.json"
# The model server's base port (fast +0, fallback +1), in the bench's own range.
MODELSERVER_PORT = 18240

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/tierdesk_bench"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/2"

# The issue's targets for this 2-core machine.
TARGETS = {
    "first_chunk_p95_ms_1_session": 150.0,
    "first_chunk_p95_ms_20_sessions": 400.0,
    "tokens_per_s_ratio_min": 0.90,
    "router_p95_ms": 5.0,
    # Issue #16: what the web tier adds to bare llama.cpp's first token, at p50.
    "first_chunk_overhead_p50_ms_max": 30.0,
}

# The L1 mix: (expected intent, language, text, weight). Order ids are the shopper's own.
MIX: list[tuple[str, str, str, int]] = [
    ("order_status", "en", "where is my order {oid}?", 3),
    ("order_status", "en", "what's the status of order {oid}", 2),
    ("delivery_time", "en", "when will order {oid} arrive", 3),
    ("refund_status", "en", "has my refund for {oid} come through", 2),
    ("shipping_cost", "en", "how much is shipping", 1),
    ("order_status", "zh", "我的订单{oid}到哪了？", 1),
    ("delivery_time", "zh", "订单{oid}什么时候到？", 1),
]

READY_TIMEOUT_S = 300.0  # warm-up loads two models; slow when the machine is busy
MESSAGE_TIMEOUT_S = 60.0
ROUND_TIMEOUT_S = 600.0


# --- data ---------------------------------------------------------------------------------


@dataclass
class Msg:
    kind: str  # the intent the mix expects
    text: str
    # Filled in from the in-process Dialogue plan (what the server will do).
    tier: str = ""
    intent: str = ""
    prompt: str | None = None
    max_tokens: int = 0
    temperature: float = 0.0
    stop: tuple[str, ...] = ()


@dataclass
class Conv:
    customer_id: str
    messages: list[Msg]
    token: str = ""


@dataclass
class Scenario:
    key: str  # "sessions_1" | "sessions_20"
    concurrency: int
    # One lane per concurrent session; a lane runs its conversations one after another.
    lanes: list[list[Conv]]
    warmup: int  # messages at the start of each conversation left out of the stats
    block: int = 5  # messages per lane per round (bare and server alternate by round)
    measured: bool = True  # False: a warm-up scenario, run but not summarised
    # Mean pause before each message (a shopper reading and typing); 0 = closed loop,
    # the next message goes out as soon as the previous reply is done.
    think_s: float = 0.0

    def steps(self) -> list[list[Step]]:
        """Each lane's messages in order, conversation after conversation."""
        rng = random.Random(self.key)
        return [
            [
                Step(
                    lane=i,
                    conv=c,
                    index=j,
                    msg=msg,
                    measured=self.measured and j >= self.warmup,
                    # The same pauses on both sides: 0.5x to 1.5x the mean.
                    think_s=self.think_s * rng.uniform(0.5, 1.5),
                )
                for c, conv in enumerate(lane)
                for j, msg in enumerate(conv.messages)
            ]
            for i, lane in enumerate(self.lanes)
        ]

    @property
    def conversations(self) -> int:
        return sum(len(lane) for lane in self.lanes)

    @property
    def messages(self) -> int:
        return sum(len(c.messages) for lane in self.lanes for c in lane)


@dataclass
class Step:
    lane: int
    conv: int
    index: int
    msg: Msg
    measured: bool
    think_s: float = 0.0

    def sample(self) -> Sample:
        return Sample(
            lane=self.lane,
            conv=self.conv,
            index=self.index,
            kind=self.msg.kind,
            measured=self.measured,
            tier=self.msg.tier,
            intent=self.msg.intent,
        )


@dataclass
class Sample:
    lane: int
    conv: int
    index: int
    kind: str
    measured: bool
    first_ms: float | None = None  # send -> first chunk (bare: request -> first visible text)
    stream_ms: float | None = None  # first chunk -> done (bare: first text -> last token)
    total_ms: float | None = None
    prompt_tokens: int = 0
    completion: int = 0
    model: str = ""
    tier: str = ""
    intent: str = ""
    guard: str = ""
    replaced: bool = False
    error: str = ""
    server_first_ms: float | None = None
    fallback: str = ""
    # Bare only: llama.cpp's own timings.
    cache_n: int = 0
    prompt_n: int = 0
    engine_decode_tok_s: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


# --- environment and services -------------------------------------------------------------


# Where the server's models run: "server" (the production default, `manage.py modelserver`)
# or "inprocess" (inside Daphne, as before issue #16); set by --models.
MODELS = {"mode": "server", "port": MODELSERVER_PORT}


def bench_env(*, warmup: bool) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        TIERDESK_MODELS=str(MODELS["mode"]),
        TIERDESK_MODEL_SERVER_PORT=str(MODELS["port"]),
        DATABASE_URL=os.environ.get("TIERDESK_BENCH_DATABASE_URL", DEFAULT_DATABASE_URL),
        REDIS_URL=os.environ.get("TIERDESK_BENCH_REDIS_URL", DEFAULT_REDIS_URL),
        TIERDESK_ENV="development",
        # The scripted shoppers send no bot-check fingerprint; the check's own cost is
        # measured by bench/bot.py.
        TIERDESK_BOTCHECK="off",
        # What is compared with bare llama.cpp is the path to and from the model: no
        # turn may be degraded to its template for being over budget (make load
        # measures admission control).
        TIERDESK_ADMISSION="false",
        DJANGO_DEBUG="false",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        TIERDESK_WARMUP_ON_START="true" if warmup else "false",
        DJANGO_SETTINGS_MODULE="config.settings",
        PYTHONUNBUFFERED="1",
    )
    return env


def database_ensure(url: str) -> None:
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = urlunsplit(("postgresql", parts.netloc, "/postgres", "", ""))
    with psycopg.connect(admin, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')
            log(f"created database {name}")


def redis_flush(url: str) -> None:
    import redis

    client = redis.Redis.from_url(url)
    try:
        client.flushdb()
    finally:
        client.close()


def manage(*args: str) -> None:
    started = time.perf_counter()
    subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), "manage.py", *args],
        cwd=ROOT,
        env=bench_env(warmup=False),
        check=True,
        timeout=600,
        stdout=subprocess.DEVNULL,
    )
    log(f"manage.py {' '.join(args)}: {time.perf_counter() - started:.1f}s")


class DaphneServer:
    """The production-shaped server as a subprocess in its own process group."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.proc: subprocess.Popen[bytes] | None = None
        self.ready_s = 0.0

    def start(self) -> None:
        DAPHNE_LOG.parent.mkdir(parents=True, exist_ok=True)
        logfile = DAPHNE_LOG.open("wb")
        self.proc = subprocess.Popen(
            [
                str(ROOT / ".venv" / "bin" / "daphne"),
                "-b",
                "127.0.0.1",
                "-p",
                str(self.port),
                "config.asgi:application",
            ],
            cwd=ROOT,
            env=bench_env(warmup=True),
            stdout=logfile,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        logfile.close()

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> dict[str, Any]:
        import httpx

        assert self.proc is not None
        started = time.perf_counter()
        url = f"http://127.0.0.1:{self.port}/readyz"
        last: Any = None
        with httpx.Client(timeout=2.0, trust_env=False) as client:
            while time.perf_counter() - started < timeout_s:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"Daphne exited ({self.proc.returncode}):\n{log_tail()}")
                try:
                    response = client.get(url)
                    last = response.text
                    if response.status_code == 200:
                        self.ready_s = time.perf_counter() - started
                        return dict(response.json())
                except httpx.HTTPError as exc:
                    last = repr(exc)
                time.sleep(0.5)
        raise RuntimeError(f"not ready after {timeout_s:.0f}s: {last}\n{log_tail()}")

    def stop(self) -> None:
        if self.proc is not None:
            process_group_stop(self.proc)


class ModelServerProc:
    """``manage.py modelserver`` for the fast and fallback roles, as production runs it
    (not supervised here: the CPU meter reads this very process)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.proc: subprocess.Popen[bytes] | None = None
        self.ready_s = 0.0
        self.status = MODELSERVER_STATUS
        # Per port: two benches (l1, load) may each run a model server at once.
        self.log = MODELSERVER_LOG.with_name(f"bench-modelserver-{port}.log")

    def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.status.parent.mkdir(parents=True, exist_ok=True)
        self.status.unlink(missing_ok=True)
        with self.log.open("wb") as logfile:
            self.proc = subprocess.Popen(
                [
                    str(ROOT / ".venv" / "bin" / "python"),
                    "manage.py",
                    "modelserver",
                    "--roles",
                    "fast,fallback",
                    "--port",
                    str(self.port),
                    "--status-file",
                    str(self.status),
                ],
                cwd=ROOT,
                env=bench_env(warmup=False),
                stdout=logfile,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        assert self.proc is not None
        started = time.perf_counter()
        while time.perf_counter() - started < timeout_s:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"model server exited ({self.proc.returncode}):\n"
                    + self.log.read_text(errors="replace")[-3000:]
                )
            if self.status.exists():
                self.ready_s = time.perf_counter() - started
                return
            time.sleep(0.5)
        raise RuntimeError(f"model server not ready after {timeout_s:.0f}s")

    def rss_mb(self) -> float | None:
        return process_rss_mb(self.proc.pid) if self.proc is not None else None

    def stop(self) -> None:
        if self.proc is not None:
            process_group_stop(self.proc)


def process_rss_mb(pid: int) -> float | None:
    """Resident memory of a process in MB (VmRSS), None if it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        return None
    return None


def process_group_stop(proc: subprocess.Popen[Any], wait_s: float = 15) -> None:
    """TERM a subprocess started with ``start_new_session``, KILL it if it lingers."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)
    except ProcessLookupError:
        pass


def log_tail(lines: int = 30) -> str:
    try:
        return "\n".join(DAPHNE_LOG.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def log(text: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {text}", flush=True)


# --- scripts and prompts (in-process, Django set up against the bench database) -----------


def scenarios_build(
    *, seed: int, c1_convs: int, c1_msgs: int, sessions: int, msgs: int, think_s: float = 0.0
) -> list[Scenario]:
    from django.db.models import Count

    from chatbot.orders.identity import shopper_token_issue
    from chatbot.orders.models import Customer

    rng = random.Random(seed)
    customers = list(
        Customer.objects.annotate(n=Count("orders"))
        .filter(n__gte=2)
        .order_by("customer_id")
        .prefetch_related("orders")
    )
    needed = c1_convs + sessions
    if len(customers) < needed:
        raise RuntimeError(
            f"need {needed} shoppers with 2+ orders, the bench DB has {len(customers)}"
        )
    chosen = rng.sample(customers, needed)
    weights = [w for *_, w in MIX]

    def conversation(customer: Any, count: int) -> Conv:
        order_ids = [o.order_id for o in customer.orders.all()]
        messages = []
        for _ in range(count):
            kind, _lang, text, _w = rng.choices(MIX, weights=weights)[0]
            messages.append(Msg(kind=kind, text=text.format(oid=rng.choice(order_ids))))
        # Valid for the whole run: the server checks the signature and expiry only.
        token = shopper_token_issue(customer_id=customer.customer_id, ttl_s=3600)
        return Conv(customer_id=customer.customer_id, messages=messages, token=token)

    c1 = Scenario(
        key="sessions_1",
        concurrency=1,
        lanes=[[conversation(c, c1_msgs) for c in chosen[:c1_convs]]],
        warmup=1,
        block=1,
    )
    c20 = Scenario(
        key=f"sessions_{sessions}",
        concurrency=sessions,
        lanes=[[conversation(c, msgs)] for c in chosen[c1_convs:]],
        warmup=1,
        block=2,
        think_s=think_s,
    )
    return [c1, c20]


def prefix_warmup_build() -> Scenario:
    """One message of every (intent, case, language) few-shot prefix of the mix.

    A long-running server has all of them in llama.cpp's prompt cache; a fresh one
    pays ~100-140 tokens of prompt processing the first time it meets each. This
    unmeasured pass puts both engines in the steady state before anything is timed.
    """
    from chatbot.orders.identity import shopper_token_issue
    from chatbot.orders.models import Order

    convs = []
    seen_templates: set[str] = set()
    for status in ("pending", "processed", "delivered", "cancelled"):
        for refunded in (False, True):
            orders = Order.objects.filter(status=status).select_related("customer")
            order = next(
                (o for o in orders[:200] if _has_refund(o.payment_history) == refunded), None
            )
            if order is None:
                continue
            messages = []
            for kind, _lang, text, _w in MIX:
                if "{oid}" not in text:
                    if text in seen_templates:
                        continue
                    seen_templates.add(text)
                messages.append(Msg(kind=kind, text=text.format(oid=order.order_id)))
            token = shopper_token_issue(customer_id=order.customer.customer_id, ttl_s=3600)
            convs.append(Conv(order.customer.customer_id, messages, token))
    return Scenario(
        key="prefix_warmup",
        concurrency=1,
        lanes=[convs],
        warmup=0,
        block=len(MIX),
        measured=False,
    )


def _has_refund(history: Any) -> bool:
    return any(
        isinstance(entry, dict) and entry.get("transaction_type") == "refund"
        for entry in history or []
    )


def prompts_plan(scenarios: list[Scenario]) -> dict[str, Any]:
    """The exact prompt and sampling the server builds for each message.

    Also times the plan itself (router, order lookup, prompt building and compression:
    everything the server does before the model starts), as part of first-chunk latency.
    """
    from chatbot.dialogue import Dialogue, TurnContext
    from knowledge.text import language_detect

    times: list[float] = []
    cpu_times: list[float] = []
    for scenario in scenarios:
        for lane in scenario.lanes:
            for conv in lane:
                for msg in conv.messages:
                    ctx = TurnContext(
                        text=msg.text,
                        language=language_detect(msg.text),
                        state={},
                        customer_id=conv.customer_id,
                        history=[],
                    )
                    started, cpu_started = time.perf_counter(), time.thread_time()
                    plan = Dialogue(ctx).plan()
                    times.append((time.perf_counter() - started) * 1000)
                    cpu_times.append((time.thread_time() - cpu_started) * 1000)
                    msg.tier, msg.intent = plan.tier, plan.intent
                    if plan.generation is not None and plan.generation.prompt is not None:
                        msg.prompt = plan.generation.prompt
                        msg.max_tokens = plan.generation.max_tokens
                        msg.temperature = plan.generation.temperature
                        msg.stop = tuple(plan.generation.stop)
    times, cpu_times = times[5:], cpu_times[5:]  # the first calls load spaCy, the router
    return {
        "plans": len(times),
        "p50_ms": pct(times, 50),
        "p95_ms": pct(times, 95),
        "cpu_p50_ms": pct(cpu_times, 50),
        "cpu_p95_ms": pct(cpu_times, 95),
    }


def pre_model_bench(scenario: Scenario) -> dict[str, Any]:
    """The server's own work before the model is called, timed in-process on idle cores:
    ``services.message_store`` (the message is stored before anything else) and
    ``services.turn_plan`` (conversation state, router, order facts, prompt building
    and compression, the reply row). It writes real rows into the bench database."""
    from chatbot import services

    times: list[float] = []
    for lane in scenario.lanes:
        for conv in lane:
            conversation, _created = services.conversation_open(session_key=None)
            services.conversation_identify(
                conversation_id=conversation.pk,
                customer_id=conv.customer_id,
                vip=False,
                method="token",
            )
            for index, msg in enumerate(conv.messages):
                started = time.perf_counter()
                message, _new = services.message_store(
                    conversation_id=conversation.pk,
                    client_id=f"pre-{uuid.uuid4().hex[:12]}",
                    text=msg.text,
                )
                plan, reply_id = services.turn_plan(
                    conversation_id=conversation.pk, message_id=message.pk
                )
                elapsed = (time.perf_counter() - started) * 1000
                services.reply_finish(reply_id=reply_id, text=plan.text, status="complete")
                if index >= scenario.warmup:
                    times.append(elapsed)
    return {"turns": len(times), "p50_ms": pct(times, 50), "p95_ms": pct(times, 95)}


def router_bench(*, seed: int, count: int, warmup: int) -> dict[str, Any]:
    """Router decision time in-process over the L1 mix (distinct order ids)."""
    from chatbot.orders.models import Order
    from knowledge.text import language_detect
    from routing.router import route_message

    rng = random.Random(seed + 1)
    order_ids = list(Order.objects.values_list("order_id", flat=True))
    weights = [w for *_, w in MIX]
    texts: list[tuple[str, str]] = []
    for _ in range(count + warmup):
        kind, _lang, text, _w = rng.choices(MIX, weights=weights)[0]
        texts.append((kind, text.format(oid=rng.choice(order_ids))))
    for _kind, text in texts[:warmup]:
        route_message(text=text, language=language_detect(text))
    times: list[float] = []
    cpu_times: list[float] = []
    matched = 0
    tiers: Counter[str] = Counter()
    for kind, text in texts[warmup:]:
        language = language_detect(text)
        started, cpu_started = time.perf_counter(), time.thread_time()
        decision = route_message(text=text, language=language)
        times.append((time.perf_counter() - started) * 1000)
        cpu_times.append((time.thread_time() - cpu_started) * 1000)
        tiers[decision.tier] += 1
        matched += decision.intent == kind
    return {
        "messages": count,
        "warmup_messages": warmup,
        "p50_ms": pct(times, 50),
        "p95_ms": pct(times, 95),
        "p99_ms": pct(times, 99),
        "mean_ms": mean(times),
        "max_ms": round(max(times), 3),
        # CPU time of the deciding thread: what the decision costs without the time
        # other processes on this shared machine took the core away.
        "cpu_p50_ms": pct(cpu_times, 50),
        "cpu_p95_ms": pct(cpu_times, 95),
        "intent_match_share": round(matched / count, 4),
        "tiers": dict(tiers),
    }


# --- bare llama.cpp -----------------------------------------------------------------------


class BareEngine:
    """xllamacpp.Server configured like inference.backends.llamacpp, used directly."""

    def __init__(self, speculative: str | None = None) -> None:
        import xllamacpp as xlc
        from django.conf import settings

        from inference.backends.llamacpp import server_params
        from inference.catalog import resolve_model_file

        config = dict(settings.LOCAL_MODELS["fast"]["CONFIG"])
        if speculative is not None:  # the A/B of speculative decoding (speculative_ab)
            config["speculative"] = speculative
        path, _sha = resolve_model_file(
            model=str(config.get("model", "")),
            path=str(config.get("path", "")),
            sha256=str(config.get("sha256", "")),
            model_dir=settings.TIERDESK_MODEL_DIR,
        )
        self.n_parallel = int(config.get("n_parallel", 4))
        self.ctx_per_slot = int(config.get("n_ctx_per_slot", 1024))
        self.threads = int(config.get("threads") or settings.TIERDESK_THREADS)
        self.model_file = path.name
        self.speculative = str(config.get("speculative") or "")
        # The very parameters the model server uses (slots, threads, swa_full,
        # cache_prompt, speculative decoding when set).
        params = server_params(config, path)
        self.server: Any = xlc.Server(params)

    def warm_up(self) -> None:
        # The same dummy requests the server's warm-up sends (inference.warmup).
        from inference.warmup import WARMUP_TOKENS

        for i in range(5):
            msg = Msg(kind="warmup", text="", prompt="Warm-up: say hello to a shopper.\nReply:")
            msg.max_tokens, msg.temperature = WARMUP_TOKENS[i % len(WARMUP_TOKENS)], 0.2
            self.complete(msg, Sample(lane=0, conv=0, index=i, kind="warmup", measured=False))

    def complete(self, msg: Msg, sample: Sample) -> Sample:
        assert msg.prompt is not None
        payload: dict[str, Any] = {
            "prompt": msg.prompt,
            "stream": True,
            "max_tokens": msg.max_tokens,
            "temperature": msg.temperature,
            "cache_prompt": True,
        }
        if msg.stop:
            payload["stop"] = list(msg.stop)
        state: dict[str, Any] = {
            "first": None,
            "last": None,
            "usage": None,
            "timings": None,
            "text": [],
        }
        started = time.perf_counter()

        def on_chunk(data: Any) -> bool:
            now = time.perf_counter()
            choices = data.get("choices") or []
            text = str(choices[0].get("text") or "") if choices else ""
            state["text"].append(text)
            # Visible text, as the server's first chunk must carry (it strips spaces).
            if state["first"] is None and text.strip():
                state["first"] = now
            if text or (choices and choices[0].get("finish_reason")):
                state["last"] = now
            if data.get("usage"):
                state["usage"] = data["usage"]
            if data.get("timings"):
                state["timings"] = data["timings"]
            return False

        result = self.server.handle_completions(payload, on_chunk)
        ended = time.perf_counter()
        if isinstance(result, dict) and "error" in result:
            sample.error = str(result["error"])[:200]
            return sample
        usage = state["usage"] or {}
        timings = state["timings"] or {}
        sample.completion = int(usage.get("completion_tokens", 0))
        sample.prompt_tokens = int(usage.get("prompt_tokens", 0))
        sample.total_ms = (ended - started) * 1000
        if state["first"] is not None:
            sample.first_ms = (state["first"] - started) * 1000
            sample.stream_ms = ((state["last"] or ended) - state["first"]) * 1000
        sample.cache_n = int(timings.get("cache_n", 0))
        sample.prompt_n = int(timings.get("prompt_n", 0))
        if timings.get("predicted_per_second"):
            sample.engine_decode_tok_s = float(timings["predicted_per_second"])
        sample.model = self.model_file
        sample.extra["text"] = "".join(state["text"])
        return sample

    def run_round(self, pool: ThreadPoolExecutor, slices: list[list[Step]]) -> list[Sample]:
        """Every lane sends its slice, one request at a time, all lanes concurrently."""
        active = [sl for sl in slices if sl]
        barrier = threading.Barrier(len(active)) if active else None

        def lane_run(steps: list[Step]) -> list[Sample]:
            assert barrier is not None
            barrier.wait(timeout=60)
            out = []
            for step in steps:
                if step.msg.prompt is None:
                    continue  # the server answers it from a template: no model call
                time.sleep(step.think_s)
                out.append(self.complete(step.msg, step.sample()))
            return out

        futures = [pool.submit(lane_run, sl) for sl in active]
        deadline = time.perf_counter() + ROUND_TIMEOUT_S
        samples: list[Sample] = []
        for future in futures:
            samples += future.result(timeout=max(1.0, deadline - time.perf_counter()))
        return samples


def speculative_ab(
    scenario: Scenario, plain: BareEngine, kind: str, rounds: int = 2
) -> dict[str, Any]:
    """Speculative decoding, measured on the engine itself: the same L1 prompts through
    bare llama.cpp without and with n-gram (prompt-lookup) drafting, one request at a
    time, alternating request by request so both see the same machine noise. L1
    replies copy ids, dates and carriers from the prompt, where drafting might pay.
    """
    drafted = BareEngine(speculative=kind)
    drafted.warm_up()
    steps = [st for lane in scenario.steps() for st in lane if st.msg.prompt is not None]
    sides: dict[str, list[Sample]] = {"off": [], "on": []}
    for _ in range(rounds):
        for step in steps:
            for name, engine in (("off", plain), ("on", drafted)):
                sides[name].append(engine.complete(step.msg, step.sample()))
    del drafted

    def summary(samples: list[Sample]) -> dict[str, Any]:
        ok = [x for x in samples if not x.error]
        rates = [r for x in ok if (r := tok_s(x)) is not None]
        totals = [x.total_ms for x in ok if x.total_ms is not None]
        firsts = [x.first_ms for x in ok if x.first_ms is not None]
        return {
            "requests": len(samples),
            "errors": len(samples) - len(ok),
            "decode_tok_s_p50": pct(rates, 50),
            "first_token_ms_p50": pct(firsts, 50),
            "total_ms_p50": pct(totals, 50),
            "completion_tokens_mean": mean([float(x.completion) for x in ok]),
        }

    off, on = summary(sides["off"]), summary(sides["on"])
    same = sum(
        1
        for a, b in zip(sides["off"], sides["on"], strict=True)
        if a.extra.get("text") is not None and a.extra.get("text") == b.extra.get("text")
    )
    return {
        "kind": kind,
        "off": off,
        "on": on,
        "decode_tok_s_ratio": ratio(on["decode_tok_s_p50"], off["decode_tok_s_p50"]),
        "total_ms_ratio": ratio(on["total_ms_p50"], off["total_ms_p50"]),
        "same_text_share": round(same / len(sides["off"]), 3) if sides["off"] else None,
    }


# --- WebSocket shoppers -------------------------------------------------------------------


def process_cpu_s(pid: int) -> float | None:
    """CPU seconds a process has used (utime + stime); None if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (float(fields[11]) + float(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class CpuMeter:
    """Who used the cores while each side ran (the machine is shared).

    ``foreign``: all busy time in /proc/stat minus this process's and Daphne's own CPU
    time, i.e. other people's work. ``bench`` / ``daphne``: each process's own CPU, so
    an engine that should be idle while the other side runs shows up if it isn't.
    """

    SIDES = ("bare", "server")

    def __init__(
        self, *, bench_pid: int, daphne_pid: int, others: dict[str, int] | None = None
    ) -> None:
        # ``others``: more processes to account for by name (bench/load.py).
        self.pids = {"bench": bench_pid, "daphne": daphne_pid, **(others or {})}
        self.wall = dict.fromkeys(self.SIDES, 0.0)
        self.core_s = {side: dict.fromkeys(["foreign", *self.pids], 0.0) for side in self.SIDES}
        self._mark: dict[str, float] | None = None

    def _read(self) -> dict[str, float] | None:
        try:
            fields = [float(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:9]]
            out = {"total": sum(fields), "busy": sum(fields) - fields[3] - fields[4]}
        except (OSError, ValueError, IndexError):
            return None
        for name, pid in self.pids.items():
            used = process_cpu_s(pid)
            if used is None:
                return None
            out[name] = used
        return out

    def start(self) -> None:
        self._mark = self._read()

    def stop(self, side: str, wall_s: float) -> None:
        now, mark, self._mark = self._read(), self._mark, None
        if now is None or mark is None or now["total"] <= mark["total"] or wall_s <= 0:
            return
        # /proc/stat counts all CPUs: the share of its total, times the core count.
        cores = os.cpu_count() or 1
        busy = (now["busy"] - mark["busy"]) / (now["total"] - mark["total"]) * cores * wall_s
        own = {name: now[name] - mark[name] for name in self.pids}
        self.core_s[side]["foreign"] += max(0.0, busy - sum(own.values()))
        for name, value in own.items():
            self.core_s[side][name] += value
        self.wall[side] += wall_s

    def cores(self, side: str) -> dict[str, float] | None:
        wall = self.wall[side]
        if not wall:
            return None
        return {name: round(value / wall, 2) for name, value in self.core_s[side].items()}


class WsLane:
    """One shopper's browser: a WebSocket per conversation, one message at a time."""

    def __init__(
        self,
        port: int,
        lane_index: int,
        convs: list[Conv],
        tag: str,
        reply_timeout_s: float = MESSAGE_TIMEOUT_S,
    ) -> None:
        self.port = port
        self.reply_timeout_s = reply_timeout_s
        self.lane_index = lane_index
        self.convs = convs
        self.tag = tag
        self.ws: Any = None
        self.conv_index = -1

    async def _connect(self, conv_index: int) -> Any:
        """A new socket past ``hello``, with the conversation's identify frame sent."""
        from websockets.asyncio.client import connect
        from websockets.typing import Origin

        await self.close()
        ws = await connect(
            f"ws://127.0.0.1:{self.port}/ws/chat/",
            origin=Origin(f"http://127.0.0.1:{self.port}"),
            proxy=None,
            open_timeout=30,
        )
        hello = await _recv_json(ws, 30)
        if hello.get("type") != "hello":
            raise RuntimeError(f"expected hello, got {hello}")
        await ws.send(json.dumps({"type": "identify", "token": self.convs[conv_index].token}))
        return ws

    async def _open(self, conv_index: int) -> None:
        ws = await self._connect(conv_index)
        frame = await _recv_json(ws, 30)
        if frame.get("type") != "identified":
            raise RuntimeError(f"identify failed: {frame}")
        self.ws, self.conv_index = ws, conv_index

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
            self.ws = None

    async def run(self, steps: list[Step]) -> list[Sample]:
        # Connect first, then start together: connection set-up is not what is measured.
        if steps and steps[0].conv != self.conv_index:
            await self._open(steps[0].conv)
        samples = []
        for step in steps:
            if step.conv != self.conv_index:
                await self._open(step.conv)
            await asyncio.sleep(step.think_s)
            samples.append(await self._send(step))
        return samples

    async def _send(self, step: Step) -> Sample:
        sample = step.sample()
        client_id = f"b{self.tag}-{self.lane_index}-{step.conv}-{step.index}"
        sent = time.perf_counter()
        sample.extra["sent_at"] = sent  # lines the turn up with bench/load.py's core samples
        await self.ws.send(json.dumps({"type": "message", "id": client_id, "text": step.msg.text}))
        first: float | None = None
        last: float | None = None
        try:
            while True:
                frame = await _recv_json(self.ws, self.reply_timeout_s)
                kind = frame.get("type")
                now = time.perf_counter()
                if kind in ("chunk", "replace"):
                    first = now if first is None else first
                    last = now
                    sample.replaced = sample.replaced or kind == "replace"
                elif kind == "done":
                    _done_fill(sample, frame, sent, first, now)
                    if first is not None and last is not None:
                        sample.extra["last_chunk_ms"] = (last - first) * 1000
                    break
                elif kind == "error":
                    sample.error = str(frame.get("code", "error"))
                    sample.total_ms = (now - sent) * 1000
                    break
        except TimeoutError:
            sample.error = "timeout"
            # The connection's state is unknown: the next message opens a fresh one.
            await self.close()
            self.conv_index = -1
        return sample


async def _recv_json(ws: Any, wait_s: float) -> dict[str, Any]:
    raw = await asyncio.wait_for(ws.recv(), timeout=wait_s)
    frame = json.loads(raw)
    return frame if isinstance(frame, dict) else {"type": "?"}


async def scenario_run(
    scenario: Scenario, port: int, bare: BareEngine, meter: CpuMeter
) -> tuple[list[Sample], list[Sample], float, float]:
    """Alternate bare llama.cpp and the server round by round over the same messages.

    In each round every lane sends its next ``scenario.block`` messages, first to the
    bare engine (the server sits idle), then over the WebSockets (the bare engine sits
    idle), so both see the same machine noise and never share the cores.
    """
    tag = uuid.uuid4().hex[:8]
    lanes = [WsLane(port, i, convs, tag) for i, convs in enumerate(scenario.lanes)]
    steps = scenario.steps()
    rounds = max(len(s) for s in steps)
    ours: list[Sample] = []
    bare_samples: list[Sample] = []
    ours_s = bare_s = 0.0
    with ThreadPoolExecutor(max_workers=scenario.concurrency) as pool:
        try:
            for start in range(0, rounds, scenario.block):
                slices = [s[start : start + scenario.block] for s in steps]
                started = time.perf_counter()
                meter.start()
                bare_samples += await asyncio.to_thread(bare.run_round, pool, slices)
                meter.stop("bare", time.perf_counter() - started)
                bare_s += time.perf_counter() - started
                started = time.perf_counter()
                meter.start()
                results = await asyncio.wait_for(
                    asyncio.gather(*(lane.run(sl) for lane, sl in zip(lanes, slices, strict=True))),
                    timeout=ROUND_TIMEOUT_S,
                )
                meter.stop("server", time.perf_counter() - started)
                ours_s += time.perf_counter() - started
                ours += [sample for lane_samples in results for sample in lane_samples]
        finally:
            for lane in lanes:
                await lane.close()
    return ours, bare_samples, ours_s, bare_s


def _done_fill(
    sample: Sample, frame: dict[str, Any], sent: float, first: float | None, now: float
) -> None:
    tokens = frame.get("tokens") or {}
    sample.total_ms = (now - sent) * 1000
    if first is not None:
        sample.first_ms = (first - sent) * 1000
        sample.stream_ms = (now - first) * 1000
    sample.prompt_tokens = int(tokens.get("prompt") or 0)
    sample.completion = int(tokens.get("completion") or 0)
    sample.model = str(frame.get("model") or "")
    sample.tier = str(frame.get("tier") or "")
    sample.intent = str(frame.get("intent") or "")
    sample.guard = str(frame.get("guard") or "")
    sample.server_first_ms = frame.get("first_chunk_ms")
    sample.extra["status"] = str(frame.get("status") or "")
    if frame.get("error"):
        sample.extra["done_error"] = str(frame["error"])
    if frame.get("degraded"):
        sample.extra["degraded"] = True
    fallback = frame.get("fallback")
    sample.fallback = str(fallback.get("reason", "")) if isinstance(fallback, dict) else ""


# --- statistics ---------------------------------------------------------------------------


def pct(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 2) if values else None


def mean(values: list[float]) -> float | None:
    return round(float(np.mean(values)), 2) if values else None


def tok_s(sample: Sample) -> float | None:
    """Streamed tokens/s: completion tokens over the time from first chunk to the end."""
    if sample.completion <= 1 or not sample.stream_ms or sample.stream_ms <= 0:
        return None
    return sample.completion / (sample.stream_ms / 1000)


def ours_summary(scenario: Scenario, samples: list[Sample], wall_s: float) -> dict[str, Any]:
    measured = [s for s in samples if s.measured]
    ok = [s for s in measured if not s.error]
    firsts = [s.first_ms for s in ok if s.first_ms is not None]
    # Model-phrased replies whose text streamed through the guard to the end.
    phrased = [s for s in ok if s.model and s.completion > 0]
    # "n/a": the guard is switched off (TIERDESK_FACT_GUARD=false) and the text streams.
    streamed = [s for s in phrased if s.guard in ("passed", "n/a") and not s.replaced]
    rates = [r for s in streamed if (r := tok_s(s)) is not None]
    guarded = [s for s in ok if s.guard in ("passed", "template")]
    passed = sum(1 for s in guarded if s.guard == "passed")
    phrased_firsts = [s.first_ms for s in streamed if s.first_ms is not None]
    server_firsts = [float(s.server_first_ms) for s in ok if s.server_first_ms is not None]
    return {
        "sessions": scenario.concurrency,
        "conversations": scenario.conversations,
        "messages": scenario.messages,
        "measured_messages": len(measured),
        "warmup_messages_per_conversation": scenario.warmup,
        "wall_s": round(wall_s, 1),
        "first_chunk_ms": {"p50": pct(firsts, 50), "p95": pct(firsts, 95), "mean": mean(firsts)},
        "first_chunk_ms_model_streamed": {
            "p50": pct(phrased_firsts, 50),
            "p95": pct(phrased_firsts, 95),
        },
        "server_first_chunk_ms": {"p50": pct(server_firsts, 50), "p95": pct(server_firsts, 95)},
        "tokens_per_s_per_session": {
            "p50": pct(rates, 50),
            "mean": mean(rates),
            "replies": len(rates),
        },
        # Diagnosis: the rate up to the last chunk, and what the end of a turn costs
        # after it (guard finish, storing the reply, the done frame).
        "tokens_per_s_to_last_chunk_p50": pct(
            [
                s.completion / (s.extra["last_chunk_ms"] / 1000)
                for s in streamed
                if s.extra.get("last_chunk_ms") and s.completion > 1
            ],
            50,
        ),
        "done_after_last_chunk_ms_p50": pct(
            [
                s.stream_ms - s.extra["last_chunk_ms"]
                for s in streamed
                if s.stream_ms is not None and "last_chunk_ms" in s.extra
            ],
            50,
        ),
        "completion_tokens_mean": mean([float(s.completion) for s in streamed]),
        "model_phrased_replies": len(phrased),
        "guard_pass_share": round(passed / len(guarded), 4) if guarded else None,
        "guard": dict(Counter(s.guard or "-" for s in ok)),
        "replaced": sum(1 for s in ok if s.replaced),
        "degraded": sum(1 for s in ok if s.extra.get("degraded")),
        "tiers": dict(Counter(s.tier for s in ok)),
        "intents": dict(Counter(s.intent for s in ok)),
        "models": dict(Counter(s.model or "(template)" for s in ok)),
        "fallbacks": dict(Counter(s.fallback for s in ok if s.fallback)),
        "errors": len(measured) - len(ok),
        "error_codes": dict(Counter(s.error for s in measured if s.error)),
        "intent_match_share": round(sum(s.intent == s.kind for s in ok) / len(ok), 4)
        if ok
        else None,
    }


def bare_summary(scenario: Scenario, samples: list[Sample], wall_s: float) -> dict[str, Any]:
    measured = [s for s in samples if s.measured and not s.error]
    firsts = [s.first_ms for s in measured if s.first_ms is not None]
    rates = [r for s in measured if (r := tok_s(s)) is not None]
    engine = [s.engine_decode_tok_s for s in measured if s.engine_decode_tok_s]
    cached = [s.cache_n / (s.cache_n + s.prompt_n) for s in measured if s.cache_n + s.prompt_n]
    return {
        "sessions": scenario.concurrency,
        "requests": len(samples),
        "measured_requests": len(measured),
        "wall_s": round(wall_s, 1),
        "first_token_ms": {"p50": pct(firsts, 50), "p95": pct(firsts, 95), "mean": mean(firsts)},
        "decode_tok_s": {"p50": pct(rates, 50), "mean": mean(rates)},
        "engine_predicted_tok_s": {"p50": pct(engine, 50), "mean": mean(engine)},
        "prompt_cache_hit_share": mean(cached),
        "prompt_tokens_mean": mean([float(s.prompt_tokens) for s in measured]),
        "prompt_tokens_processed_mean": mean([float(s.prompt_n) for s in measured]),
        "completion_tokens_mean": mean([float(s.completion) for s in measured]),
        "errors": sum(1 for s in samples if s.error),
    }


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def paired(ours: list[Sample], bare: list[Sample]) -> dict[str, float | None]:
    """Median of per-message ratios, each message against its own bare run next to it."""
    bare_by_key = {(s.lane, s.conv, s.index): s for s in bare if not s.error}
    first: list[float] = []
    rate: list[float] = []
    for s in ours:
        b = bare_by_key.get((s.lane, s.conv, s.index))
        if b is None or not s.measured or s.error:
            continue
        if s.first_ms and b.first_ms:
            first.append(s.first_ms / b.first_ms)
        ours_rate, bare_rate = tok_s(s), tok_s(b)
        if s.guard in ("passed", "n/a") and not s.replaced and ours_rate and bare_rate:
            rate.append(ours_rate / bare_rate)
    return {
        "paired_first_chunk_median": round(float(np.median(first)), 3) if first else None,
        "paired_tokens_per_s_median": round(float(np.median(rate)), 3) if rate else None,
        "pairs": len(first),
    }


def prompt_match(ours: list[Sample], bare: list[Sample]) -> float | None:
    """Share of messages where the server's prompt token count equals the bare one's."""
    bare_by_key = {(s.lane, s.conv, s.index): s for s in bare}
    pairs = [
        (s, bare_by_key[(s.lane, s.conv, s.index)])
        for s in ours
        if s.model and s.prompt_tokens and (s.lane, s.conv, s.index) in bare_by_key
    ]
    if not pairs:
        return None
    return round(sum(a.prompt_tokens == b.prompt_tokens for a, b in pairs) / len(pairs), 4)


# --- main ---------------------------------------------------------------------------------


def machine_info() -> dict[str, Any]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "nproc": os.cpu_count(),
        "cpu_model": cpu,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "loadavg_start": list(os.getloadavg()),
    }


def git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10
        )
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _terminate(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--sessions", type=int, default=20, help="concurrent sessions (2nd run)")
    parser.add_argument("--messages", type=int, default=10, help="messages per concurrent session")
    parser.add_argument("--single-conversations", type=int, default=4)
    parser.add_argument("--single-messages", type=int, default=10, help="per conversation")
    parser.add_argument(
        "--think-s",
        type=float,
        default=0.0,
        help="mean pause before each message at N sessions (0: closed loop, the default)",
    )
    parser.add_argument("--router-messages", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--no-setup", action="store_true", help="skip migrate/seed")
    parser.add_argument(
        "--no-prefix-warmup",
        action="store_true",
        help="measure from a cold prompt cache (no unmeasured pass over every few-shot prefix)",
    )
    parser.add_argument(
        "--models",
        choices=("server", "inprocess"),
        default="server",
        help="the server's models in the model server process (default) or inside Daphne",
    )
    parser.add_argument("--model-server-port", type=int, default=MODELSERVER_PORT)
    parser.add_argument(
        "--speculative-ab",
        default="ngram-simple",
        help="also measure this kind of speculative decoding against none on the bare "
        "engine ('' skips it)",
    )
    parser.add_argument(
        "--speculative",
        default=None,
        help="n-gram speculative decoding for the fast model, on both sides "
        "(a kind of inference.backends.llamacpp.SPECULATIVE_TYPES; default: the setting)",
    )
    args = parser.parse_args(argv)
    MODELS.update(mode=args.models, port=args.model_server_port)
    if args.speculative is not None:
        os.environ["TIERDESK_FAST_SPECULATIVE"] = args.speculative
    # Turn a TERM (timeout, Ctrl-C from make) into SystemExit so Daphne is stopped.
    signal.signal(signal.SIGTERM, _terminate)
    logging.getLogger("httpx").setLevel(logging.WARNING)

    env = bench_env(warmup=False)
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    machine = machine_info()
    started_at = datetime.now(UTC)

    database_ensure(env["DATABASE_URL"])
    redis_flush(env["REDIS_URL"])
    if not args.no_setup:
        manage("migrate", "--noinput", "-v", "0")
        manage("seed_demo")

    import django

    django.setup()

    scenarios = scenarios_build(
        seed=args.seed,
        c1_convs=args.single_conversations,
        c1_msgs=args.single_messages,
        sessions=args.sessions,
        msgs=args.messages,
        think_s=args.think_s,
    )
    warm = None if args.no_prefix_warmup else prefix_warmup_build()
    log("planning the prompts in-process (Dialogue)...")
    plan_times = prompts_plan(([warm] if warm is not None else []) + scenarios)
    log("server work before the model (message_store + turn_plan, in-process)...")
    pre_model = pre_model_bench(scenarios[0])
    log(f"pre-model p50 {pre_model['p50_ms']} ms, p95 {pre_model['p95_ms']} ms")
    log("router decision time...")
    router = router_bench(seed=args.seed, count=args.router_messages, warmup=100)
    log(f"router p50 {router['p50_ms']} ms, p95 {router['p95_ms']} ms")

    model_server = ModelServerProc(args.model_server_port) if args.models == "server" else None
    if model_server is not None:
        log(f"starting the model server on 127.0.0.1:{args.model_server_port}+...")
        model_server.start()
        model_server.wait_ready()
        log(f"model server ready in {model_server.ready_s:.1f}s")

    log("loading bare llama.cpp...")
    bare_engine = BareEngine()
    bare_engine.warm_up()

    speculative: dict[str, Any] = {}
    if args.speculative_ab and not bare_engine.speculative:
        log(f"speculative decoding ({args.speculative_ab}) against none, bare engine...")
        speculative.update(speculative_ab(scenarios[0], bare_engine, args.speculative_ab))
        log(
            f"speculative: decode tok/s ratio {speculative['decode_tok_s_ratio']}, "
            f"total time ratio {speculative['total_ms_ratio']}"
        )

    server = DaphneServer(free_port())
    results: dict[str, Any] = {}
    bare_results: dict[str, Any] = {}
    ratios: dict[str, Any] = {}
    phases: list[dict[str, Any]] = []

    readiness: dict[str, Any] = {}

    def write_report(*, final: bool) -> None:
        report = _report_build(
            final=final,
            args=args,
            scenarios=scenarios,
            results=results,
            bare_results=bare_results,
            ratios=ratios,
            router=router,
            plan_times=plan_times,
            pre_model=pre_model,
            machine=machine,
            started_at=started_at,
            bare_engine=bare_engine,
            server=server,
            readiness=readiness,
            phases=phases,
            prefix_warmup=warm is not None,
            model_server=model_server,
            speculative=speculative,
        )
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
        if final:
            summary_print(report, scenarios[0].key, scenarios[1].key)
            shown = args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out
            log(f"wrote {shown}")

    async def drive() -> None:
        for scenario in ([warm] if warm is not None else []) + scenarios:
            log(
                f"{scenario.key}: {scenario.concurrency} session(s), {scenario.messages} "
                f"messages, bare llama.cpp and server alternating every {scenario.block}..."
            )
            load_before = os.getloadavg()[0]
            assert server.proc is not None
            others = {}
            if model_server is not None and model_server.proc is not None:
                others["modelserver"] = model_server.proc.pid
            meter = CpuMeter(bench_pid=os.getpid(), daphne_pid=server.proc.pid, others=others)
            ours_samples, bare_samples, ours_s, bare_s = await scenario_run(
                scenario, server.port, bare_engine, meter
            )
            phases.append(
                {
                    "phase": scenario.key,
                    "load1_before": round(load_before, 2),
                    "load1_after": round(os.getloadavg()[0], 2),
                    "server_s": round(ours_s, 1),
                    "bare_s": round(bare_s, 1),
                    # Cores in use while each side ran: other people's work, the
                    # bench process (bare llama.cpp + clients), the Daphne server.
                    "cores_during_server": meter.cores("server"),
                    "cores_during_bare": meter.cores("bare"),
                    "rss_mb": {
                        "daphne": process_rss_mb(server.proc.pid),
                        "modelserver": model_server.rss_mb() if model_server else None,
                    },
                }
            )
            if not scenario.measured:
                errors = [s.error for s in ours_samples if s.error]
                log(f"{scenario.key}: done ({len(errors)} errors)")
                continue
            ours = ours_summary(scenario, ours_samples, ours_s)
            ours["prompt_tokens_match_share"] = prompt_match(ours_samples, bare_samples)
            bare = bare_summary(scenario, bare_samples, bare_s)
            results[scenario.key], bare_results[scenario.key] = ours, bare
            first, bare_first = ours["first_chunk_ms"], bare["first_token_ms"]
            ratios[scenario.key] = {
                "first_chunk_overhead_p50_ms": (
                    round(first["p50"] - bare_first["p50"], 1)
                    if first["p50"] is not None and bare_first["p50"] is not None
                    else None
                ),
                "first_chunk_p50": ratio(first["p50"], bare_first["p50"]),
                "first_chunk_p95": ratio(first["p95"], bare_first["p95"]),
                "tokens_per_s": ratio(
                    ours["tokens_per_s_per_session"]["p50"], bare["decode_tok_s"]["p50"]
                ),
                **paired(ours_samples, bare_samples),
            }
            write_report(final=False)  # a run cut short still leaves its figures
            log(
                f"{scenario.key}: first chunk p95 {first['p95']} ms (bare {bare_first['p95']}), "
                f"tok/s p50 {ours['tokens_per_s_per_session']['p50']} "
                f"(bare {bare['decode_tok_s']['p50']}), errors {ours['errors']}"
            )

    try:
        server.start()
        log(f"Daphne on 127.0.0.1:{server.port}; waiting for /readyz...")
        readiness.update(server.wait_ready())
        log(f"ready in {server.ready_s:.1f}s")
        asyncio.run(drive())
    finally:
        server.stop()
        if model_server is not None:
            model_server.stop()
        if server.proc is not None and server.proc.returncode not in (0, -signal.SIGTERM, None):
            log(f"Daphne exit code {server.proc.returncode}")

    write_report(final=True)
    return 0


def _report_build(
    *,
    final: bool,
    args: argparse.Namespace,
    scenarios: list[Scenario],
    results: dict[str, Any],
    bare_results: dict[str, Any],
    ratios: dict[str, Any],
    router: dict[str, Any],
    plan_times: dict[str, Any],
    pre_model: dict[str, Any],
    machine: dict[str, Any],
    started_at: datetime,
    bare_engine: BareEngine,
    server: DaphneServer,
    readiness: dict[str, Any],
    phases: list[dict[str, Any]],
    prefix_warmup: bool,
    model_server: ModelServerProc | None = None,
    speculative: dict[str, Any] | None = None,
) -> dict[str, Any]:
    from django.conf import settings

    single, multi = scenarios[0].key, scenarios[1].key
    n = scenarios[1].concurrency

    def get(*path: str) -> Any:
        node: Any = {"ours": results, "bare": bare_results, "ratios": ratios}
        for key in path:
            if not isinstance(node, dict) or key not in node:
                return None
            node = node[key]
        return node

    if multi in ratios:
        # Per-session rate at N sessions against the bare engine running one stream
        # alone: the issue's literal reading (N streams share 2 cores).
        ratios[multi]["tokens_per_s_vs_bare_single_stream"] = ratio(
            get("ours", multi, "tokens_per_s_per_session", "p50"),
            get("bare", single, "decode_tok_s", "p50"),
        )

    def at_most(value: float | None, limit: float) -> bool | None:
        return None if value is None else value <= limit

    def at_least(value: float | None, limit: float) -> bool | None:
        return None if value is None else value >= limit

    verdicts = {
        "first_chunk_p95_1_session": at_most(
            get("ours", single, "first_chunk_ms", "p95"), TARGETS["first_chunk_p95_ms_1_session"]
        ),
        f"first_chunk_p95_{n}_sessions": at_most(
            get("ours", multi, "first_chunk_ms", "p95"), TARGETS["first_chunk_p95_ms_20_sessions"]
        ),
        "tokens_per_s_1_session_vs_bare": at_least(
            get("ratios", single, "tokens_per_s"), TARGETS["tokens_per_s_ratio_min"]
        ),
        f"tokens_per_s_{n}_sessions_vs_bare_same_concurrency": at_least(
            get("ratios", multi, "tokens_per_s"), TARGETS["tokens_per_s_ratio_min"]
        ),
        f"tokens_per_s_{n}_sessions_vs_bare_single_stream": at_least(
            get("ratios", multi, "tokens_per_s_vs_bare_single_stream"),
            TARGETS["tokens_per_s_ratio_min"],
        ),
        "router_p95": at_most(router["p95_ms"], TARGETS["router_p95_ms"]),
        "first_chunk_overhead_p50_1_session": at_most(
            get("ratios", single, "first_chunk_overhead_p50_ms"),
            TARGETS["first_chunk_overhead_p50_ms_max"],
        ),
        f"first_chunk_overhead_p50_{n}_sessions": at_most(
            get("ratios", multi, "first_chunk_overhead_p50_ms"),
            TARGETS["first_chunk_overhead_p50_ms_max"],
        ),
    }
    # The headline numbers, flat (docs/benchmarks.md quotes these).
    figures: dict[str, Any] = {}
    for key, label in ((single, "1"), (multi, str(n))):
        figures.update(
            {
                f"first_chunk_p50_ms_{label}": get("ours", key, "first_chunk_ms", "p50"),
                f"first_chunk_p95_ms_{label}": get("ours", key, "first_chunk_ms", "p95"),
                f"bare_first_token_p50_ms_{label}": get("bare", key, "first_token_ms", "p50"),
                f"bare_first_token_p95_ms_{label}": get("bare", key, "first_token_ms", "p95"),
                f"first_chunk_overhead_p50_ms_{label}": get(
                    "ratios", key, "first_chunk_overhead_p50_ms"
                ),
                f"tokens_per_s_p50_{label}": get("ours", key, "tokens_per_s_per_session", "p50"),
                f"bare_tokens_per_s_p50_{label}": get("bare", key, "decode_tok_s", "p50"),
                f"tokens_per_s_ratio_{label}": get("ratios", key, "tokens_per_s"),
                f"guard_pass_share_{label}": get("ours", key, "guard_pass_share"),
                f"errors_{label}": get("ours", key, "errors"),
            }
        )
    last = phases[-1] if phases else {}
    figures["rss_mb_daphne"] = (last.get("rss_mb") or {}).get("daphne")
    figures["rss_mb_modelserver"] = (last.get("rss_mb") or {}).get("modelserver")
    if speculative:
        figures["speculative_decode_tok_s_ratio"] = speculative.get("decode_tok_s_ratio")
        figures["speculative_total_ms_ratio"] = speculative.get("total_ms_ratio")
    machine["loadavg_end"] = list(os.getloadavg())
    fast = settings.INFERENCE_BACKENDS["fast"]["CONFIG"]
    return {
        "benchmark": "l1",
        "complete": final,
        "timestamp": started_at.isoformat(timespec="seconds"),
        "duration_s": round((datetime.now(UTC) - started_at).total_seconds(), 1),
        "git_commit": git_commit(),
        "machine": machine,
        "config": {
            "model": fast.get("model"),
            "model_file": bare_engine.model_file,
            "threads": bare_engine.threads,
            "fast_parallel_slots": bare_engine.n_parallel,
            "fast_ctx_per_slot": bare_engine.ctx_per_slot,
            "fast_max_tokens": settings.TIERDESK_FAST_MAX_TOKENS,
            "fast_temperature": settings.TIERDESK_FAST_TEMPERATURE,
            "l1_compression": getattr(settings, "TIERDESK_L1_COMPRESSION", None),
            "swa_full": True,
            "cache_prompt": True,
            "server": "daphne (1 process), PostgreSQL, Redis channel layer, DJANGO_DEBUG=false",
            "models": MODELS["mode"],
            "model_server": (
                f"manage.py modelserver --roles fast,fallback on 127.0.0.1:{MODELS['port']}+"
                if model_server is not None
                else None
            ),
            "model_server_ready_s": round(model_server.ready_s, 1) if model_server else None,
            "speculative": bare_engine.speculative or None,
            "server_ready_s": round(server.ready_s, 1),
            "readiness": readiness,
            "prefix_warmup": prefix_warmup,
            "phases": phases,
            "mix": [
                {"intent": k, "language": lang, "text": t, "weight": w} for k, lang, t, w in MIX
            ],
            "seed": args.seed,
            "think_s_at_n_sessions": args.think_s,
        },
        **results,
        "bare": bare_results,
        "ratios": ratios,
        "router": router,
        # Dialogue.plan in-process (what a turn costs before the model is called).
        "dialogue_plan": plan_times,
        # message_store + turn_plan in-process: everything before the model starts.
        "server_pre_model": pre_model,
        # Speculative decoding on the bare engine, without against with (speculative_ab).
        "speculative_ab": speculative or None,
        "targets": TARGETS,
        "verdicts": verdicts,
        "figures": figures,
    }


def summary_print(report: dict[str, Any], single: str, multi: str) -> None:
    print()
    print(f"L1 benchmark  {report['timestamp']}  commit {report['git_commit'][:10]}")
    machine = report["machine"]
    print(
        f"  machine: {machine['nproc']} cores {machine['cpu_model']}, load "
        f"{machine['loadavg_start'][0]:.2f} -> {machine['loadavg_end'][0]:.2f}"
    )
    header = "  {!s:<12} {!s:>9} {!s:>9} {!s:>9} {!s:>10} {!s:>8} {!s:>6}"
    print(header.format("", "1st p50", "1st p95", "tok/s p50", "guard ok", "errors", ""))
    for key in (single, multi):
        ours, bare, rat = report[key], report["bare"][key], report["ratios"][key]
        print(
            header.format(
                f"ours {ours['sessions']}",
                ours["first_chunk_ms"]["p50"],
                ours["first_chunk_ms"]["p95"],
                ours["tokens_per_s_per_session"]["p50"],
                ours["guard_pass_share"],
                ours["errors"],
                "",
            )
        )
        print(
            header.format(
                f"bare {bare['sessions']}",
                bare["first_token_ms"]["p50"],
                bare["first_token_ms"]["p95"],
                bare["decode_tok_s"]["p50"],
                "",
                bare["errors"],
                "",
            )
        )
        print(
            f"  {'ours/bare':<12} {rat['first_chunk_p50']!s:>9} {rat['first_chunk_p95']!s:>9} "
            f"{rat['tokens_per_s']!s:>9}   (paired medians: first chunk "
            f"{rat['paired_first_chunk_median']}, tok/s {rat['paired_tokens_per_s_median']})"
        )
    for phase in report["config"]["phases"]:
        print(
            f"  cores in use, {phase['phase']}: during the server's turns "
            f"{phase['cores_during_server']}, during bare's {phase['cores_during_bare']}"
        )
    router = report["router"]
    print(f"  router: p50 {router['p50_ms']} ms, p95 {router['p95_ms']} ms")
    print(verdicts_line(report["verdicts"]))


def verdicts_line(verdicts: dict[str, bool | None]) -> str:
    """The targets as one printed line: PASS, MISS or n/a each."""
    marks = {None: "n/a", True: "PASS", False: "MISS"}
    return "  targets: " + ", ".join(f"{k}={marks[v]}" for k, v in verdicts.items())


if __name__ == "__main__":
    raise SystemExit(main())
