"""The model server beyond this machine only with a key: ``manage.py modelserver
--host 0.0.0.0`` without TIERDESK_MODEL_SERVER_API_KEY refuses to start; with the key,
a real llama.cpp listener (the fast model) answers only requests that carry it, and the
clients Tierdesk uses (the OpenAI-compatible backend, the capacity probe) send it.
The server stops itself (``--lifetime``) even if this test process dies."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from inference.backends.openai import OpenAIBackend
from inference.base import GenerationRequest
from inference.capacity import probe_sync
from tests.browser.live import REPO, _tail
from tests.faults import until

from .test_modelserver import _free_base_port

KEY = "test-model-server-key-0123456789"


def test_listening_beyond_loopback_without_a_key_is_refused() -> None:
    env = {k: v for k, v in os.environ.items() if k != "TIERDESK_MODEL_SERVER_API_KEY"}
    result = subprocess.run(
        [sys.executable, "manage.py", "modelserver", "--host", "0.0.0.0", "--roles", "fast"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode != 0
    assert "TIERDESK_MODEL_SERVER_API_KEY" in result.stderr
    assert "--host 0.0.0.0 listens beyond this machine" in result.stderr


@pytest.fixture(scope="module")
def keyed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from django.conf import settings

    from inference.catalog import CATALOG, model_assemble

    model_assemble(entry=CATALOG["gemma3-270m-q4km"], model_dir=settings.TIERDESK_MODEL_DIR)
    tmp = tmp_path_factory.mktemp("modelserver-key")
    status = tmp / "status.json"
    log = tmp / "modelserver.log"
    port = _free_base_port()
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [
                *(sys.executable, "manage.py", "modelserver", "--roles", "fast"),
                *("--port", str(port), "--warmup", "1", "--host", "0.0.0.0"),
                *("--status-file", str(status), "--lifetime", "300"),
            ],
            cwd=REPO,
            env=os.environ | {"TIERDESK_MODEL_SERVER_API_KEY": KEY},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        assert until(status.exists, 240), f"model server not ready:\n{_tail(Path(log))}"
        yield f"http://127.0.0.1:{port}"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def test_a_keyed_server_answers_only_with_the_key(keyed_server: str, settings: Any) -> None:
    url = keyed_server
    # /health stays open: a container's health check needs no secret.
    assert httpx.get(f"{url}/health", timeout=5).status_code == 200
    for path in ("/slots", "/metrics"):
        assert httpx.get(url + path, timeout=5).status_code == 401, path
    wrong = {"Authorization": "Bearer nope"}
    assert httpx.get(f"{url}/slots", headers=wrong, timeout=5).status_code == 401
    completion = {"prompt": "Hello", "max_tokens": 4}
    assert httpx.post(f"{url}/v1/completions", json=completion, timeout=30).status_code == 401

    # Tierdesk's own clients send the key from the settings.
    settings.TIERDESK_MODEL_SERVER_API_KEY = KEY
    slots = probe_sync("fast", url, timeout_s=5)
    assert slots.reachable and slots.total >= 1, slots
    settings.TIERDESK_MODEL_SERVER_API_KEY = ""
    assert not probe_sync("fast", url, timeout_s=5).reachable
    backend = OpenAIBackend("fast", {"api_base": url, "api_key": KEY, "model": "fast"})
    request = GenerationRequest(prompt="Shopper: hi\nAgent:", max_tokens=8)
    assert "".join(chunk.text for chunk in backend.stream(request)).strip()
