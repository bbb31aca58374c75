"""The model server: the local models in their own process, supervised.

A real ``manage.py modelserver --supervise`` serves the fast model (Gemma 3 270M) on
127.0.0.1; a real Daphne reaches it over HTTP (TIERDESK_MODELS=server). The model
server's child process gets SIGKILL while it is generating a shopper's L1 reply: the
reply still completes, degraded to the template with the order's facts (no error
frame), and the supervisor starts the model server again by itself, after which replies
are model-phrased again. The capacity client (``inference.capacity``) reads its slots.

Everything is on 127.0.0.1, every wait is bounded, and the server stops itself
(``--lifetime``) even if this test process dies.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from inference.backends.openai import OpenAIBackend, UpstreamError
from inference.base import GenerationRequest
from inference.capacity import probe_sync
from tests.browser.live import REPO, _manage, _server_database, _tail, server_env
from tests.faults import Daphne, until

ORDER = "#W2611340"  # james_li_5688's order in the demo shop (seed_demo)
QUESTION = f"where is my order {ORDER}?"
PROMPT = GenerationRequest(prompt="Shopper: where is my parcel?\nAgent:", max_tokens=48)


def _free_base_port() -> int:
    """A free port in this suite's model-server range (18250-18289)."""
    for port in range(18250 + os.getpid() % 20, 18290):
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) != 0:
                return port
    raise RuntimeError("no free port in 18250-18289")


class SupervisedModelServer:
    def __init__(self, tmp: Path) -> None:
        self.port = _free_base_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.status = tmp / "modelserver.json"
        self.log = tmp / "modelserver.log"
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [
                    *(sys.executable, "manage.py", "modelserver", "--roles", "fast"),
                    *("--port", str(self.port), "--supervise", "--warmup", "1"),
                    *("--status-file", str(self.status), "--lifetime", "420"),
                ],
                cwd=REPO,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        assert until(self.status.exists, 240), f"model server not ready:\n{_tail(self.log)}"

    def child_pid(self) -> int:
        return int(json.loads(self.status.read_text())["pid"])

    def kill_child(self) -> int:
        """SIGKILL the serving process (not the supervisor): a crash, not a stop."""
        pid = self.child_pid()
        os.kill(pid, signal.SIGKILL)
        return pid

    def back_after(self, killed: int, timeout_s: float = 180) -> bool:
        def restarted() -> bool:
            return self.status.exists() and self.child_pid() != killed

        return until(restarted, timeout_s)

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def model_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SupervisedModelServer]:
    from django.conf import settings

    from inference.catalog import CATALOG, model_assemble

    model_assemble(entry=CATALOG["gemma3-270m-q4km"], model_dir=settings.TIERDESK_MODEL_DIR)
    server = SupervisedModelServer(tmp_path_factory.mktemp("modelserver"))
    try:
        yield server
    finally:
        server.stop()


def _kill_when_busy(server: SupervisedModelServer, stop: threading.Event) -> dict[str, Any]:
    """In a thread: SIGKILL the model server the moment a slot is generating."""
    seen: dict[str, Any] = {}

    def watch() -> None:
        deadline = time.monotonic() + 90
        while not stop.is_set() and time.monotonic() < deadline:
            slots = probe_sync("fast", server.url, timeout_s=1.0)
            if slots.reachable and slots.busy:
                seen["killed"] = server.kill_child()
                return
            time.sleep(0.005)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    seen["thread"] = thread
    return seen


@pytest.mark.models
def test_slots_then_kill_9_mid_stream_fails_fast_and_the_server_comes_back(
    model_server: SupervisedModelServer,
) -> None:
    slots = probe_sync("fast", model_server.url)
    assert slots.reachable and (slots.total, slots.busy, slots.deferred) == (8, 0, 0)
    client = OpenAIBackend(
        "fast", {"api_base": model_server.url, "model_server": True, "model": "gemma3-270m-q4km"}
    )
    assert client.chat is False and client.count_tokens("hello world") == 2  # exact
    stop = threading.Event()
    seen = _kill_when_busy(model_server, stop)
    chunks = []
    with pytest.raises(UpstreamError) as failed:
        for chunk in client.stream(PROMPT):
            chunks.append(chunk)
    stop.set()
    seen["thread"].join(timeout=5)
    assert "killed" in seen, "the watcher never saw the request in a slot"
    assert failed.value.code in ("upstream_disconnected", "upstream_unreachable")
    assert failed.value.counts_for_breaker
    # The supervisor starts a new server process, which serves again.
    assert model_server.back_after(seen["killed"]), _tail(model_server.log)
    text = "".join(c.text for c in client.stream(PROMPT))
    assert text.strip()
    client.close()


@pytest.fixture
def daphne(tmp_path: Path, model_server: SupervisedModelServer) -> Iterator[Daphne]:
    log = tmp_path / "server.log"
    with _server_database(tmp_path, "_modelserver") as database_url:
        env = server_env(
            database_url,
            {
                "TIERDESK_MODELS": "server",
                "TIERDESK_MODEL_SERVER_PORT": str(model_server.port),
                "TIERDESK_WARM_ROLES": "fast",
                # A turn must reach the model server (which is then killed), not be
                # degraded up front for being slow on a busy machine (admission
                # control has its own tests).
                "TIERDESK_ADMISSION": "false",
            },
        )
        _manage(env, log, "seed_demo")
        server = Daphne(env, log)
        server.start()  # answers one order question: the router and prompt are warm
        try:
            yield server
        finally:
            server.stop()


def _ask(url: str, token: str, text: str) -> dict[str, Any]:
    """One L1 turn over a real WebSocket: the reply's text and its done frame."""
    from websockets.sync.client import connect
    from websockets.typing import Origin

    ws_url = url.replace("http", "ws", 1) + "/ws/chat/"
    with connect(ws_url, origin=Origin(url), open_timeout=15, close_timeout=5) as ws:
        assert json.loads(ws.recv(timeout=15))["type"] == "hello"
        ws.send(json.dumps({"type": "identify", "token": token}))
        assert json.loads(ws.recv(timeout=15))["type"] == "identified"
        ws.send(json.dumps({"type": "message", "id": f"m{time.monotonic_ns()}", "text": text}))
        parts: list[str] = []
        frames: list[str] = []
        while True:
            frame = json.loads(ws.recv(timeout=60))
            frames.append(frame["type"])
            if frame["type"] == "chunk":
                parts.append(frame["text"])
            elif frame["type"] == "replace":
                parts = [frame["text"]]
            elif frame["type"] in ("done", "error"):
                return {"text": "".join(parts), "frames": frames, "last": frame}


@pytest.mark.models
def test_kill_9_mid_reply_completes_degraded_and_the_server_comes_back(
    model_server: SupervisedModelServer, daphne: Daphne
) -> None:
    from chatbot.orders.identity import shopper_token_issue

    token = shopper_token_issue(customer_id="james_li_5688")
    # The kill lands while the model server generates this reply (a slot is busy). A
    # reply may finish before the watcher sees its slot: ask again, at most 3 times.
    killed = None
    for _attempt in range(3):
        stop = threading.Event()
        seen = _kill_when_busy(model_server, stop)
        reply = _ask(daphne.url, token, QUESTION)
        stop.set()
        seen["thread"].join(timeout=5)
        if "killed" in seen:
            killed = seen["killed"]
            break
        assert model_server.back_after(-1)
    assert killed is not None, "no reply was in the model server when it was watched"
    done = reply["last"]
    # Completed, not failed: a done frame, the template with the order's facts.
    assert done["type"] == "done", reply
    assert "error" not in reply["frames"], reply
    assert done["guard"] == "template", done
    assert done["fallback"]["reason"] in ("upstream_disconnected", "upstream_unreachable"), done
    assert ORDER.lstrip("#") in reply["text"], reply
    # The supervisor restarts the model server; the next reply is the model's again.
    assert model_server.back_after(killed), _tail(model_server.log)

    def phrased() -> bool:
        again = _ask(daphne.url, token, QUESTION)["last"]
        return again["type"] == "done" and not again.get("fallback")

    assert until(phrased, 90), _tail(daphne.log)


def test_warm_up_waits_for_a_model_server_that_is_not_up_yet_then_says_why() -> None:
    """A web process started before its model server (systemd, compose) waits for it
    during warm-up instead of failing at once; a bounded wait names the server."""
    from inference.warmup import model_server_wait

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    backend = OpenAIBackend(
        "fast", {"api_base": f"http://127.0.0.1:{port}", "model_server": True, "model": "x"}
    )
    started = time.monotonic()
    with pytest.raises(RuntimeError, match=f"127.0.0.1:{port} not answering"):
        model_server_wait(backend, timeout_s=1.0)
    assert 1.0 <= time.monotonic() - started < 6.0
