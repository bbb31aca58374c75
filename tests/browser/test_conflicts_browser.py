"""Issue #33 item 5, end to end in Chromium: a support admin adds a "Gift wrapping"
article at $5.99 while the demo "Pricing FAQ" says $4.99; the worker ingests it and
finds the conflict, the documents list counts it, a shopper asking the price is told
both articles' words and offered a person, and the admin resolves it on the
side-by-side page (conflicts_e2e.mjs).

The server and worker are real (Daphne, ``celery worker``) on a database and a broker
of their own. Writes docs/admin-conflicts.png when TIERDESK_DOCS_SCREENSHOTS=1."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.faults import CeleryWorker, until

from .live import REPO, LiveServer, _manage, _stop, live_server_run, server_env

pytestmark = pytest.mark.browser

SCRIPT = Path(__file__).with_name("conflicts_e2e.mjs")
NODE_TIMEOUT_S = 600
DEMO_KB_TIMEOUT_S = 600
# A broker database of its own: the server's tasks must reach this test's worker.
BROKER_DB = 13
ADMIN = (
    "from django.contrib.auth import get_user_model; U = get_user_model();"
    "U.objects.filter(username='kb_admin').exists() or "
    "U.objects.create_superuser('kb_admin', 'kb@example.com', 'kb_admin')"
)
# The demo article that prices gift wrapping stays; the others are removed before the
# worker starts, so it doesn't spend the test's time ingesting them.
KEEP = (
    "from knowledge.models import Document;"
    "assert Document.objects.filter(seed_key='en-pricing-faq').exists();"
    "Document.objects.exclude(seed_key='en-pricing-faq').delete()"
)


@dataclass(frozen=True)
class ServerAndWorker:
    server: LiveServer
    worker_log: Path


def _broker_url() -> str:
    parts = urlsplit(os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/1")
    return urlunsplit((parts.scheme, parts.netloc, f"/{BROKER_DB}", "", ""))


@pytest.fixture(scope="module")
def conflicts_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerAndWorker]:
    import psycopg
    import redis

    broker = _broker_url()
    redis.Redis.from_url(broker).delete("celery")
    extra = {
        "CELERY_BROKER_URL": broker,
        "TIERDESK_STATE_PREFIX": f"tierdesk-conflicts-{os.getpid()}",
    }
    tmp = tmp_path_factory.mktemp("daphne-conflicts")
    with live_server_run(tmp, env_extra=extra, name="conflicts") as server:
        _manage(server_env(server.database_url), server.log, "shell", "-c", ADMIN)
        _manage(server_env(server.database_url), server.log, "shell", "-c", KEEP)
        worker_log = tmp / "worker.log"
        # No summary or card model in the worker: this test is about the conflict.
        worker_env = server_env(
            server.database_url,
            {**extra, "TIERDESK_KB_SUMMARY_ROLE": "", "TIERDESK_KB_CARD_ROLE": ""},
        )
        worker = CeleryWorker(worker_env, worker_log)
        worker.start()
        try:

            def ready() -> bool:
                with psycopg.connect(server.database_url, connect_timeout=10) as conn:
                    row = conn.execute(
                        "SELECT count(*) FROM knowledge_document WHERE status <> 'ready'"
                    ).fetchone()
                return row is not None and row[0] == 0

            assert until(ready, DEMO_KB_TIMEOUT_S), worker_log.read_text(errors="replace")[-3000:]
            yield ServerAndWorker(server, worker_log)
        finally:
            if worker.proc is not None:
                _stop(worker.proc)


def test_admin_sees_two_articles_that_disagree_and_resolves_it(
    browser_tools: str, conflicts_server: ServerAndWorker, tmp_path: Path
) -> None:
    shot = (
        REPO / "docs" / "admin-conflicts.png"
        if os.environ.get("TIERDESK_DOCS_SCREENSHOTS")
        else tmp_path / "admin-conflicts.png"
    )
    env = conflicts_server
    cmd = [
        browser_tools,
        str(SCRIPT),
        "--base",
        env.server.url,
        "--user",
        "kb_admin",
        "--password",
        "kb_admin",
        "--screenshot",
        str(shot),
    ]
    proc = subprocess.run(
        cmd, cwd=REPO, capture_output=True, text=True, timeout=NODE_TIMEOUT_S, check=False
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    result: dict[str, Any] = json.loads(lines[-1]) if lines else {}
    if proc.returncode != 0 or not result.get("ok"):
        pytest.fail(
            f"conflict workflow failed: {result.get('error') or proc.stdout[-2000:]}\n"
            f"steps: {json.dumps(result.get('steps', []))[-3000:]}\n"
            f"stderr: {proc.stderr[-2000:]}\n"
            f"worker log:\n{env.worker_log.read_text(errors='replace')[-3000:]}\n"
            f"server log:\n{env.server.log.read_text(errors='replace')[-3000:]}"
        )

    assert result["count_before"] == ""
    assert result["count"].startswith("1 conflict between articles is open"), result["count"]

    # While it is open, the shopper hears both articles, cited, and is offered a person.
    reply = result["open_reply"]
    assert reply["tier"] == "L2", reply
    assert "$4.99" in reply["text"] and "$5.99" in reply["text"], reply
    assert "person" in reply["text"], reply
    assert set(reply["sources"]) >= {"Pricing FAQ", "Gift wrapping"}, reply

    # Side by side, each with its value marked; keep one, and the count is gone.
    assert sorted((s["title"], s["value"]) for s in result["sides"]) == [
        ("Gift wrapping", "$5.99"),
        ("Pricing FAQ", "$4.99"),
    ]
    assert len(result["buttons"]) == 3, result["buttons"]
    assert "Conflict resolved." in result["resolve_messages"]
    assert result["list_after"][0]["status"] == "resolved", result["list_after"]
    assert result["count_after"] == ""
    after = result["resolved_reply"]
    assert not ("$4.99" in after["text"] and "$5.99" in after["text"]), after

    assert result["errors"] == [], result["errors"]
    assert shot.stat().st_size > 20_000
