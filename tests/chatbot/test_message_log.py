"""The message-log check under faults, in the style of Jepsen.

A production-shaped stack of our own: a private PostgreSQL cluster, a private Redis
(channel layer, Celery broker, rate limits, breakers, cache) without persistence, a
real Daphne with the real models and a real Celery worker with beat. ``seed_demo``
queues the ingestion of the demo documents before any worker runs. Three shoppers
send uniquely numbered messages, each resent with the same id until it is
acknowledged and each waited on until its reply ends, as the widget does. They keep
sending until every fault has run. Meanwhile a fault thread injects, one after another:

1. **Redis stop, then start.** Chats go on: no connection is dropped, no error frame
   says ``internal_error``, and once Redis is back the channel layer blocks on it again
   (``BZPOPMIN`` shows in ``CLIENT LIST``). The broker's queue is gone with it; beat's
   sweep (``TIERDESK_KB_REQUEUE_AFTER_S``) enqueues the lost ingestions again.
2. **Celery worker kill -9** while it embeds a document, then a new worker.
3. **PostgreSQL restart** (``pg_ctl restart -m fast``). Connections recover; a message
   that could not be stored gets ``store_unavailable`` and is resent.
4. **Daphne kill -9**, then a new Daphne on the same port. Clients reconnect with their
   session keys and resend what was not acknowledged.

The checks: a final read of the database holds every acknowledged message exactly once
(0 lost, 0 duplicates), and every document ends ready with each chunk exactly once.
The counts are printed (``-s``). Bounded: at most 3 x 60 messages, every wait has a
timeout, everything is on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.browser.live import _manage, _tail, server_env
from tests.faults import CeleryWorker, Daphne, PrivatePostgres, PrivateRedis, until

pytestmark = pytest.mark.models

SHOPPERS = 3
MESSAGES = 14  # per shopper, at least; more while the faults are still running
MAX_MESSAGES = 60
# Faults start once this many messages (over all shoppers) are acknowledged.
REDIS_AT, POSTGRES_AT, DAPHNE_AT = 6, 18, 30
REDIS_DOWN_S = 4.0
TEXTS = ("hi", "what's your return policy?", "thanks", "how much is shipping?")
# Enough documents for the worker to be killed mid-ingestion and for the sweep to find
# lost ones; the whole demo knowledge base only made the wait for "all ready" longer.
KNOWLEDGE = ("en-pricing-faq", "en-boots-faq", "en-shipping", "zh-shipping", "store-policy")
REPLY_TIMEOUT_S = 120


@dataclass
class Log:
    """What the clients saw, shared with the fault thread."""

    acked: set[str] = field(default_factory=set)
    ids: set[str] = field(default_factory=set)
    sessions: list[str] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    # Connections that closed, by the phase they closed in.
    closed: Counter[str] = field(default_factory=Counter)
    phase: str = "before"
    faults_done: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def sent(self) -> int:
        """Distinct numbered messages the shoppers sent (each may have been resent)."""
        return len(self.ids)

    def ack(self, cid: str) -> None:
        with self.lock:
            self.acked.add(cid)

    def count(self) -> int:
        with self.lock:
            return len(self.acked)


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[tuple[Daphne, PrivatePostgres, PrivateRedis]]:
    pg = PrivatePostgres()
    redis = PrivateRedis()
    log = tmp_path / "server.log"
    extra = {
        "REDIS_URL": redis.url,
        "TIERDESK_STATE_REDIS_URL": "",
        "CELERY_BROKER_URL": redis.url,
        # Numbered messages a second apart are the test, not abuse.
        "TIERDESK_RATE_PER_SESSION": "10000/minute",
        "TIERDESK_RATE_PER_IP": "10000/minute",
        # The worker: quick ingestion (no summaries) and a sweep that finds lost tasks
        # in seconds, not the production quarter of an hour.
        "TIERDESK_KB_SUMMARY_ROLE": "",
        "TIERDESK_KB_REQUEUE_AFTER_S": "5",
        "TIERDESK_KB_SWEEP_S": "2",
        "HF_HUB_OFFLINE": "1",
    }
    daphne = Daphne(server_env(pg.url, extra), log)
    try:
        _manage(daphne.env, log, "migrate", "--noinput", "-v", "0")
        _manage(daphne.env, log, "seed_demo", "--knowledge", *KNOWLEDGE)
        yield daphne, pg, redis
    finally:
        daphne.stop()
        redis.stop()
        pg.destroy()


def _documents(url: str) -> list[tuple[int, str, int, int, int, int]]:
    """Per document: id, status, progress, chunk_count, chunks, distinct positions."""
    with psycopg.connect(url, connect_timeout=10) as conn:
        return [
            (r[0], r[1], r[2], r[3], r[4], r[5])
            for r in conn.execute(
                "SELECT d.id, d.status, d.progress_done, d.chunk_count, count(c.id), "
                "count(DISTINCT c.position) FROM knowledge_document d "
                "LEFT JOIN knowledge_chunk c ON c.document_id = d.id GROUP BY d.id"
            ).fetchall()
        ]


def _faults(
    log: Log,
    daphne: Daphne,
    worker: CeleryWorker,
    pg: PrivatePostgres,
    redis: PrivateRedis,
    report: dict[str, Any],
) -> Callable[[], None]:
    def wait_for(acked: int) -> None:
        until(lambda: log.count() >= acked, 300)

    def run() -> None:
        try:
            wait_for(REDIS_AT)
            log.phase = "redis"
            redis.stop()
            time.sleep(REDIS_DOWN_S)  # messages keep flowing without Redis
            redis.start()
            report["channel_layer_back"] = until(lambda: "bzpopmin" in redis.blocked_commands(), 30)
            log.phase = "celery"
            worker.start()
            # Killed while it embeds a document (some progress, not finished).
            report["worker_killed_mid_ingest"] = until(
                lambda: any(d[1] == "ingesting" and d[2] > 0 for d in _documents(pg.url)), 180
            )
            worker.kill9()
            worker.start()
            wait_for(POSTGRES_AT)
            log.phase = "postgres"
            pg.restart()
            wait_for(DAPHNE_AT)
            log.phase = "daphne"
            daphne.kill9()
            daphne.start(warm_up=False)
            report["done"] = True
        except Exception as exc:  # reported by the test, not lost in a thread
            report["error"] = repr(exc)
        finally:
            log.faults_done.set()

    return run


async def _reply_end(ws: Any, cid: str, log: Log) -> str:
    """Wait for ``cid``'s ack (or refusal), then for its reply's end: "ack" or a code."""
    acked = False
    deadline = time.monotonic() + REPLY_TIMEOUT_S
    while time.monotonic() < deadline:
        frame = json.loads(await asyncio.wait_for(ws.recv(), REPLY_TIMEOUT_S))
        kind = frame["type"]
        if kind == "ack" and frame["id"] == cid:
            acked = True
            log.ack(cid)
        elif kind == "error" and frame.get("reply_to") == cid:
            log.errors[str(frame["code"])] += 1
            if not acked:
                return str(frame["code"])  # refused before storing: resend
            return "ack"
        elif kind == "done" and acked:
            return "ack"
    raise TimeoutError(f"{cid}: no end of reply in {REPLY_TIMEOUT_S}s")


async def _shopper(n: int, daphne: Daphne, log: Log) -> None:
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed
    from websockets.typing import Origin

    session = ""
    for _attempt in range(30):  # reconnects, bounded
        query = f"?session={session}" if session else ""
        url = daphne.url
        try:
            async with connect(
                url.replace("http://", "ws://") + "/ws/chat/" + query,
                origin=Origin(url),
                proxy=None,
                open_timeout=30,
            ) as ws:
                hello = json.loads(await asyncio.wait_for(ws.recv(), 60))
                if not session:
                    session = hello["session"]
                    log.sessions.append(session)
                for i in range(1, MAX_MESSAGES + 1):
                    cid = f"s{n}-m{i}"
                    if cid in log.acked:
                        continue
                    # Stop starting new messages once the faults are over, but never
                    # abandon one already sent: a message sent before a reconnect and
                    # not yet acknowledged is resent until it is (checking the faults
                    # first would drop such a message after Daphne's restart).
                    if i > MESSAGES and log.faults_done.is_set() and cid not in log.ids:
                        break
                    log.ids.add(cid)
                    for _ in range(30):  # resends, bounded
                        frame = {"type": "message", "id": cid, "text": TEXTS[i % len(TEXTS)]}
                        await ws.send(json.dumps(frame))
                        if await _reply_end(ws, cid, log) == "ack":
                            break
                        await asyncio.sleep(0.5)
                    else:
                        raise AssertionError(f"{cid} was never acknowledged")
                    await asyncio.sleep(0.2)
                return
        except (ConnectionClosed, OSError, TimeoutError):
            log.closed[log.phase] += 1
            await asyncio.sleep(1)
    raise AssertionError(f"shopper {n} gave up after 30 connections")


async def _shoppers(daphne: Daphne, log: Log) -> None:
    await asyncio.gather(*(_shopper(n, daphne, log) for n in range(SHOPPERS)))


def test_nothing_acknowledged_is_lost_or_duplicated_through_redis_celery_postgres_daphne_faults(
    stack: tuple[Daphne, PrivatePostgres, PrivateRedis], model_files: None, tmp_path: Path
) -> None:
    daphne, pg, redis = stack
    # Beat inside the worker, as `make run` starts it: the sweep finds lost ingestions.
    beat = ["-B", "-s", str(tmp_path / "beat-schedule")]
    worker = CeleryWorker(daphne.env, tmp_path / "worker.log", extra=beat)
    daphne.start()
    log, report = Log(), dict[str, Any]()
    run = _faults(log, daphne, worker, pg, redis, report)
    faults = threading.Thread(target=run, daemon=True)
    faults.start()
    try:
        asyncio.run(_shoppers(daphne, log))
        faults.join(timeout=120)
        # The worker finishes the knowledge base: every document, each chunk once.
        ready = until(lambda: all(d[1] == "ready" for d in _documents(pg.url)), 300)
        documents = _documents(pg.url)
    finally:
        worker.kill9()

    with psycopg.connect(pg.url) as conn:
        rows = conn.execute(
            "SELECT m.client_id, count(*) FROM chatbot_message m "
            "JOIN chatbot_conversation c ON c.id = m.conversation_id "
            "WHERE c.session_key = ANY(%s) AND m.role = 'user' GROUP BY m.client_id",
            (log.sessions,),
        ).fetchall()
    stored = {cid: count for cid, count in rows}
    lost = sorted(log.acked - set(stored))
    duplicates = sorted(cid for cid, count in stored.items() if count > 1)
    chunk_errors = [d for d in documents if not (d[3] == d[4] == d[5] > 0)]
    print(
        f"\nmessage log under faults: sent {log.sent}, acknowledged {len(log.acked)}, "
        f"stored {len(stored)}, lost {len(lost)}, duplicates {len(duplicates)}; error "
        f"frames {dict(log.errors)}; connections closed by phase {dict(log.closed)}; "
        f"documents {len(documents)}, ready "
        f"{sum(d[1] == 'ready' for d in documents)}, chunks {sum(d[4] for d in documents)}"
        f", with missing or duplicate chunks {len(chunk_errors)}; faults {report}"
    )
    assert report.get("done"), f"the faults did not all run: {report}"
    assert len(log.acked) == log.sent >= SHOPPERS * MESSAGES
    assert lost == [] and duplicates == []
    # No document was lost with the broker's queue or the killed worker; none has a
    # chunk missing or twice.
    assert report["worker_killed_mid_ingest"]
    assert "re-enqueued" in worker.log.read_text(), "the sweep found no lost ingestion"
    # Every seeded document.
    assert ready and len(documents) == len(KNOWLEDGE), _tail(worker.log)
    assert chunk_errors == []
    # Redis going away dropped no chat and the channel layer came back to it.
    assert log.closed["redis"] == 0, dict(log.closed)
    assert report["channel_layer_back"]
    # Every error frame named what happened; none was a bare server error.
    assert "internal_error" not in log.errors, dict(log.errors)
    assert daphne.alive()
