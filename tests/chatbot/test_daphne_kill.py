"""Fault injection (issue #8): kill -9 Daphne in the middle of a reply.

A real Daphne process on its own seeded database streams an L3 answer from the real
fallback model to a real WebSocket client. After the first chunk the whole process
group gets SIGKILL. A second Daphne starts on the same database; the client reconnects
with its session key and the `hello` frame must show the stored conversation: the
shopper's message, and the cut-off reply marked incomplete. Nothing is lost and
nothing is duplicated. Every wait is bounded; it talks only to 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.browser.live import (
    _manage,
    _server_database,
    _stop,
    _warm_up,
    daphne_start,
    server_env,
)

pytestmark = pytest.mark.models
# The server's warm-up has conversations of its own: look at ours only.
ROWS = (
    "SELECT m.role, m.text, m.status FROM chatbot_message m "
    "JOIN chatbot_conversation c ON c.id = m.conversation_id "
    "WHERE c.session_key = %s ORDER BY m.id"
)
QUESTION = (
    "Which is better for a week of hiking in the rain, leather boots or trail shoes, and why?"
)


class Daphne:
    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.env, self.log = env, log
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""

    def start(self) -> None:
        self.proc, self.url = daphne_start(self.env, self.log)
        _warm_up(self.url, self.log)

    def kill9(self) -> None:
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=15)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            _stop(self.proc)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[Daphne, str]]:
    log = tmp_path / "server.log"
    with _server_database(tmp_path) as database_url:
        # A long reply, so the kill lands in the middle of it.
        env = server_env(database_url, {"TIERDESK_L3_MAX_TOKENS": "200"})
        _manage(env, log, "migrate", "--noinput", "-v", "0")
        _manage(env, log, "seed_demo")
        daphne = Daphne(env, log)
        try:
            yield daphne, database_url
        finally:
            daphne.stop()


async def _recv(ws: Any) -> dict[str, Any]:
    return dict(json.loads(await asyncio.wait_for(ws.recv(), 120)))


async def _first_chunk(url: str) -> tuple[str, str]:
    from websockets.asyncio.client import connect
    from websockets.typing import Origin

    ws_url = url.replace("http://", "ws://") + "/ws/chat/"
    async with connect(ws_url, origin=Origin(url), proxy=None, open_timeout=30) as ws:
        hello = await _recv(ws)
        await ws.send(json.dumps({"type": "message", "id": "k1", "text": QUESTION}))
        while True:
            frame = await _recv(ws)
            assert frame["type"] not in ("done", "error"), f"reply ended before the kill: {frame}"
            if frame["type"] == "chunk" and frame["text"].strip():
                return str(hello["session"]), str(frame["text"])


async def _resume(url: str, session: str) -> dict[str, Any]:
    from websockets.asyncio.client import connect
    from websockets.typing import Origin

    ws_url = url.replace("http://", "ws://") + f"/ws/chat/?session={session}"
    async with connect(ws_url, origin=Origin(url), proxy=None, open_timeout=30) as ws:
        return await _recv(ws)


def test_kill_9_mid_reply_loses_no_message_and_marks_the_reply_incomplete(
    server: tuple[Daphne, str], model_files: None
) -> None:
    daphne, database_url = server
    daphne.start()
    session, chunk = asyncio.run(_first_chunk(daphne.url))
    assert chunk
    daphne.kill9()

    with psycopg.connect(database_url) as conn:
        rows = conn.execute(ROWS, (session,)).fetchall()
    # The shopper's message was stored before the reply began; the reply row exists and
    # was still streaming when the process died.
    assert [(r[0], r[2]) for r in rows] == [("user", "received"), ("bot", "streaming")]
    assert rows[0][1] == QUESTION

    daphne.start()
    hello = asyncio.run(_resume(daphne.url, session))
    assert hello["session"] == session
    history = [(m["role"], m["status"]) for m in hello["history"]]
    assert history == [("user", "received"), ("bot", "incomplete")], hello["history"]
    assert hello["history"][0]["text"] == QUESTION
    with psycopg.connect(database_url) as conn:
        after = conn.execute(ROWS, (session,)).fetchall()
    # Nothing duplicated by the restart; the reply keeps whatever it had stored.
    assert [(r[0], r[2]) for r in after] == [("user", "received"), ("bot", "incomplete")]
