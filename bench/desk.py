"""Desk latency: from an agent's send to the shopper's first frame of it, at N
simultaneous handed-off conversations (issue #15: p95 <= 100 ms at 20).

Run it with ``make bench-desk``; figures go to ``bench/results/desk.json`` (a flat
``figures`` object) and docs/desk.md explains them.

What runs, all on 127.0.0.1, as in production: PostgreSQL (database
``tierdesk_bench_desk``, created, migrated and dropped), Redis db 4 (the channel layer,
flushed) and one Daphne process. No model runs: asking for a person and confirming are
answered by the router's rule and reply templates.

Each of N shoppers connects over WebSocket, asks for a person and confirms; N agents
(signed-in Django sessions) open /ws/desk/ and each claims one conversation. Then every
agent sends ``--messages`` messages with a think time of 50-250 ms (all N at once); a
sample is the time from just before the agent's ``send`` frame leaves to the moment
the shopper's client has parsed the relayed ``message`` frame. Both clients run in this
process on one event loop, so both timestamps come from one clock. The path measured:
desk consumer -> message stored in PostgreSQL -> channel layer group_send (Redis) ->
the shopper's consumer -> WebSocket.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "desk.json"
DATABASE_URL = os.environ.get(
    "TIERDESK_BENCH_DESK_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/tierdesk_bench_desk"
)
REDIS_URL = os.environ.get("TIERDESK_BENCH_DESK_REDIS_URL", "redis://127.0.0.1:6379/4")
TARGET_P95_MS = 100.0


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=DATABASE_URL,
        REDIS_URL=REDIS_URL,
        TIERDESK_ENV="development",
        TIERDESK_BOTCHECK="off",
        TIERDESK_WARMUP_ON_START="false",
        DJANGO_DEBUG="false",
        DJANGO_SETTINGS_MODULE="config.settings",
        PYTHONUNBUFFERED="1",
        HF_HUB_OFFLINE="1",
    )
    env.pop("TIERDESK_TEST_DB_NAME", None)
    return env


def _database(action: str) -> None:
    import psycopg
    from psycopg import sql

    parts = urlsplit(DATABASE_URL)
    name = parts.path.lstrip("/")
    admin = urlunsplit(("postgresql", parts.netloc, "/postgres", "", ""))
    with psycopg.connect(admin, autocommit=True, connect_timeout=10) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        if action == "create":
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def _manage(*args: str, log: Path) -> None:
    with log.open("a") as out:
        subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            check=True,
            timeout=900,
        )


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _setup_django() -> None:
    os.environ.update(_env())
    import django

    django.setup()


def _agents_make(n: int) -> list[str]:
    """N agents in the "support agents" group; their session cookies."""
    from django.conf import settings
    from django.contrib.auth import (
        BACKEND_SESSION_KEY,
        HASH_SESSION_KEY,
        SESSION_KEY,
        get_user_model,
    )
    from django.contrib.auth.models import Group
    from django.contrib.sessions.backends.db import SessionStore

    group = Group.objects.get(name="support agents")
    cookies = []
    for i in range(n):
        user = get_user_model().objects.create_user(
            f"bench_agent_{i}", password=f"pw-{i}", first_name=f"Agent{i}"
        )
        user.groups.add(group)
        session = SessionStore()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.create()
        cookies.append(f"{settings.SESSION_COOKIE_NAME}={session.session_key}")
    return cookies


async def _until(ws: Any, pred: Any, wait_s: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + wait_s
    while True:
        frame: dict[str, Any] = json.loads(
            await asyncio.wait_for(ws.recv(), max(0.1, deadline - time.monotonic()))
        )
        if pred(frame):
            return frame


async def _run(base: str, cookies: list[str], messages: int, seed: int) -> dict[str, Any]:
    from websockets.asyncio.client import connect

    ws_base = base.replace("http", "ws", 1)
    origin = base
    n = len(cookies)
    # Agents first: with nobody online the bot offers a ticket, not the queue.
    agents = [
        await connect(
            f"{ws_base}/ws/desk/",
            origin=origin,  # type: ignore[arg-type]
            additional_headers={"Cookie": cookie},
            open_timeout=30,
        )
        for cookie in cookies
    ]
    shoppers = [
        await connect(f"{ws_base}/ws/chat/", origin=origin, open_timeout=30)  # type: ignore[arg-type]
        for _ in range(n)
    ]
    for i, ws in enumerate(shoppers):
        await _until(ws, lambda f: f["type"] == "hello")
        for k, text in enumerate(("I want to talk to a human", "yes")):
            await ws.send(json.dumps({"type": "message", "id": f"s{i}-{k}", "text": text}))
            await _until(ws, lambda f: f["type"] == "done", wait_s=120)
    inbox = await _until(agents[0], lambda f: f["type"] == "inbox")
    while len(inbox["queue"]) < n:
        inbox = await _until(agents[0], lambda f: f["type"] == "inbox")
    # Queue order is the shoppers' order: agent i claims shopper i's conversation.
    conversation_ids = [item["id"] for item in inbox["queue"]]
    for agent, conversation_id in zip(agents, conversation_ids, strict=True):
        await agent.send(json.dumps({"type": "claim", "conversation": conversation_id}))
        result = await _until(agent, lambda f: f["type"] == "result" and f["action"] == "claim")
        assert result["ok"], result
    for ws in shoppers:
        await _until(ws, lambda f: f["type"] == "handoff" and f["status"] == "claimed")

    # Agents' own frames (inbox, echo) are drained in the background.
    async def drain(ws: Any) -> None:
        try:
            async for _ in ws:
                pass
        except Exception:
            return

    drains = [asyncio.create_task(drain(a)) for a in agents]
    samples: list[float] = []
    lost = 0

    async def conversation(i: int) -> None:
        nonlocal lost
        rng = random.Random(seed + i)
        for k in range(messages):
            await asyncio.sleep(rng.uniform(0.05, 0.25))
            text = f"agent {i} line {k}"
            started = time.perf_counter()
            await agents[i].send(
                json.dumps({"type": "send", "conversation": conversation_ids[i], "text": text})
            )
            try:
                await _until(
                    shoppers[i],
                    lambda f, text=text: f["type"] == "message" and f.get("text") == text,
                    wait_s=10,
                )
            except TimeoutError:
                lost += 1
                continue
            samples.append((time.perf_counter() - started) * 1000)

    started = time.perf_counter()
    await asyncio.gather(*(conversation(i) for i in range(n)))
    wall = time.perf_counter() - started
    for task in drains:
        task.cancel()
    for ws in [*shoppers, *agents]:
        await ws.close()
    samples.sort()

    def pct(q: float) -> float:
        return round(samples[min(len(samples) - 1, int(q * len(samples)))], 2)

    return {
        "conversations": n,
        "messages_per_conversation": messages,
        "samples": len(samples),
        "lost": lost,
        "p50_ms": pct(0.50),
        "p95_ms": pct(0.95),
        "p99_ms": pct(0.99),
        "max_ms": round(samples[-1], 2),
        "mean_ms": round(sum(samples) / len(samples), 2),
        "messages_per_s": round(len(samples) / wall, 1),
        "target_p95_ms": TARGET_P95_MS,
        "pass": pct(0.95) <= TARGET_P95_MS and lost == 0,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=20)
    parser.add_argument("--messages", type=int, default=30)
    parser.add_argument("--seed", type=int, default=15)
    args = parser.parse_args(argv)
    log = ROOT / "var" / "log" / "bench-desk.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    import redis

    redis.Redis.from_url(REDIS_URL).flushdb()
    _database("create")
    daphne = None
    try:
        _manage("migrate", "--noinput", "-v", "0", log=log)
        _manage(
            "shell",
            "-c",
            "from routing.seed import intents_seed; from routing.seed_templates import "
            "templates_seed; intents_seed(); templates_seed()",
            log=log,
        )
        _setup_django()
        cookies = _agents_make(args.conversations)
        port = _free_port()
        base = f"http://127.0.0.1:{port}"
        with log.open("a") as out:
            daphne = subprocess.Popen(
                [
                    str(ROOT / ".venv" / "bin" / "daphne"),
                    "-b",
                    "127.0.0.1",
                    "-p",
                    str(port),
                    "config.asgi:application",
                ],
                cwd=ROOT,
                env=_env(),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        import urllib.request

        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(base + "/healthz", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.25)
        figures = asyncio.run(_run(base, cookies, args.messages, args.seed))
    finally:
        if daphne is not None:
            os.killpg(daphne.pid, 15)
            daphne.wait(timeout=15)
        from django.db import connections

        connections.close_all()
        _database("drop")
    report = {
        "benchmark": "desk",
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
        "git_commit": subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
        ).stdout.strip(),
        "command": "make bench-desk",
        "machine": {"nproc": os.cpu_count(), "loadavg_start": list(os.getloadavg())},
        "what": "agent send -> shopper receives the relayed message frame (Daphne, "
        "PostgreSQL, Redis channel layer)",
        "figures": figures,
    }
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(figures, indent=2))
    return 0 if figures["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
