"""Fault injection (issue #8): restart PostgreSQL while shoppers send messages.

A private PostgreSQL cluster (initdb in a temporary folder, its own port on 127.0.0.1,
so the machine's server is never touched) backs a real Daphne. One client sends 40
uniquely numbered messages, each resent with the same id until it is acknowledged, as
the widget does; after the 12th, the cluster is restarted (``pg_ctl restart -m fast``).

The check, in the style of Jepsen's: a final read of the database must hold every
acknowledged message exactly once. 0 lost and 0 duplicates; the counts are printed.
Bounded: 40 messages, every wait has a timeout.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.browser.live import _free_port, _manage, server_env

from .test_daphne_kill import Daphne

PG_BIN = next(iter(sorted(Path("/usr/lib/postgresql").glob("*/bin"))), None)
MESSAGES = 40
RESTART_AFTER = 12


class PrivatePostgres:
    def __init__(self) -> None:
        assert PG_BIN is not None, "PostgreSQL server binaries are not installed"
        # initdb refuses to run as root; the cluster belongs to the postgres user.
        self.dir = Path(tempfile.mkdtemp(prefix="tierdesk-pg-"))
        self.dir.chmod(0o777)
        self.port = _free_port()
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/tierdesk"
        self._pg("initdb", "-D", str(self.dir / "data"), "-U", "postgres", "--auth=trust")
        self.start()
        with psycopg.connect(
            f"postgres://postgres@127.0.0.1:{self.port}/postgres", autocommit=True
        ) as conn:
            conn.execute("CREATE DATABASE tierdesk")

    def _pg(self, tool: str, *args: str) -> None:
        as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        assert PG_BIN is not None
        subprocess.run(
            [*as_postgres, str(PG_BIN / tool), *args],
            check=True,
            capture_output=True,
            timeout=120,
        )

    def _ctl(self, action: str, *extra: str) -> None:
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._pg(
            "pg_ctl",
            "-D",
            str(self.dir / "data"),
            "-o",
            options,
            "-l",
            str(self.dir / "log"),
            "-w",
            "-t",
            "60",
            action,
            *extra,
        )

    def start(self) -> None:
        self._ctl("start")

    def restart(self) -> None:
        self._ctl("restart", "-m", "fast")

    def destroy(self) -> None:
        try:
            self._ctl("stop", "-m", "immediate")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[tuple[Daphne, PrivatePostgres]]:
    pg = PrivatePostgres()
    log = tmp_path / "server.log"
    # 40 messages from one session in a few seconds is the test, not abuse.
    limits = {"TIERDESK_RATE_PER_SESSION": "10000/minute", "TIERDESK_RATE_PER_IP": "10000/minute"}
    env = server_env(pg.url, limits)
    daphne = Daphne(env, log)
    try:
        _manage(env, log, "migrate", "--noinput", "-v", "0")
        _manage(env, log, "seed_demo")
        yield daphne, pg
    finally:
        daphne.stop()
        pg.destroy()


async def _send_all(url: str, restart: Any) -> tuple[set[str], dict[str, int], str]:
    """Send every numbered message until it is acked; returns the acked ids, the
    counts of what happened on the way, and the session key."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed
    from websockets.typing import Origin

    acked: set[str] = set()
    seen = {"store_unavailable": 0, "reconnects": 0, "resends": 0}
    session = ""
    restarted: threading.Thread | None = None
    for _attempt in range(20):  # reconnects, bounded
        query = f"?session={session}" if session else ""
        ws_url = url.replace("http://", "ws://") + "/ws/chat/" + query
        try:
            async with connect(ws_url, origin=Origin(url), proxy=None, open_timeout=30) as ws:
                hello = json.loads(await asyncio.wait_for(ws.recv(), 60))
                session = hello["session"]
                for n in range(1, MESSAGES + 1):
                    cid = f"n{n}"
                    if cid in acked:
                        continue
                    if n == RESTART_AFTER + 1 and restarted is None:
                        restarted = threading.Thread(target=restart)
                        restarted.start()
                    for _ in range(30):  # resends, bounded
                        await ws.send(json.dumps({"type": "message", "id": cid, "text": "hi"}))
                        reply = await _ack_or_refusal(ws, cid)
                        if reply == "ack":
                            acked.add(cid)
                            break
                        seen[reply] = seen.get(reply, 0) + 1
                        seen["resends"] += 1
                        await asyncio.sleep(0.5)
                    else:
                        raise AssertionError(f"{cid} was never acknowledged")
                break
        except (ConnectionClosed, OSError, TimeoutError):
            seen["reconnects"] += 1
            await asyncio.sleep(1)
    else:
        raise AssertionError("gave up after 20 connections")
    if restarted is not None:
        restarted.join(timeout=120)
    return acked, seen, session


async def _ack_or_refusal(ws: Any, cid: str) -> str:
    while True:
        frame = json.loads(await asyncio.wait_for(ws.recv(), 60))
        if frame["type"] == "ack" and frame["id"] == cid:
            return "ack"
        if frame["type"] == "error" and frame.get("reply_to") == cid:
            if frame["code"] == "rate_limited" and frame.get("message_id"):
                return "ack"  # stored (it has an id), just not answered
            return str(frame["code"])


def test_postgres_restart_loses_no_acknowledged_message(
    stack: tuple[Daphne, PrivatePostgres], model_files: None
) -> None:
    daphne, pg = stack
    daphne.start()
    acked, seen, session = asyncio.run(_send_all(daphne.url, pg.restart))

    with psycopg.connect(pg.url) as conn:
        rows = conn.execute(
            "SELECT m.client_id, count(*) FROM chatbot_message m "
            "JOIN chatbot_conversation c ON c.id = m.conversation_id "
            "WHERE c.session_key = %s AND m.role = 'user' GROUP BY m.client_id",
            (session,),
        ).fetchall()
    stored = {cid: count for cid, count in rows}
    lost = sorted(acked - set(stored))
    duplicates = sorted(cid for cid, count in stored.items() if count > 1)
    print(
        f"\nPostgreSQL restart: sent {MESSAGES}, acknowledged {len(acked)}, "
        f"stored {len(stored)}, lost {len(lost)}, duplicates {len(duplicates)}; {seen}"
    )
    assert len(acked) == MESSAGES
    assert lost == [] and duplicates == []
    # Daphne itself survived the restart: it is still serving.
    assert daphne.proc is not None and daphne.proc.poll() is None
