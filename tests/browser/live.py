"""A real Daphne server for the browser tests, on its own seeded database.

The server is a subprocess (``.venv/bin/daphne -b 127.0.0.1 -p PORT``) so the browser
talks to exactly what ships: ASGI routing, WebSocket origin checks, static files. It
gets a database of its own (``tierdesk_browser_<pid>_<random>`` on the run's
PostgreSQL, a copy of a template migrated once per run; or a SQLite file when
DATABASE_URL is not PostgreSQL), seeded with ``seed_demo``, and dropped at the end.
Every wait is bounded.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.net import free_port

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
SERVER_START_TIMEOUT_S = 90
MANAGE_TIMEOUT_S = 600
STOP_TIMEOUT_S = 15
# A test server's shutdown is not under test: Daphne waits up to 10 s for open sockets'
# consumers on SIGTERM, so it gets this long before SIGKILL.
STOP_GRACE_S = 3
WARMUP_TIMEOUT_S = 180
SEED_COMMAND = REPO / "chatbot" / "management" / "commands" / "seed_demo.py"


# The screens the widget is walked through on: a laptop, and a 390x844 phone.
VIEWPORTS = {"desktop": (1280, 800), "phone": (390, 844)}


def viewport_args(name: str) -> tuple[str, ...]:
    """A Chromium script's --width and --height for the viewport called ``name``."""
    width, height = VIEWPORTS[name]
    return ("--width", str(width), "--height", str(height))


@dataclass(frozen=True)
class LiveServer:
    url: str
    database_url: str
    log: Path


def _bin(name: str) -> str:
    local = REPO / ".venv" / "bin" / name
    return str(local if local.exists() else Path(sys.executable).with_name(name))


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _is_postgres(url: str) -> bool:
    return urlsplit(url).scheme in {"postgres", "postgresql", "pgsql"}


def _with_db_name(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


_TEMPLATES: dict[str, str] = {}


def _template_database(base: str) -> str:
    """The name of a database migrated once per test run, to clone for each server.

    ``migrate`` on an empty database takes about 6 s of CPU here, and the suite starts
    about ten servers; ``CREATE DATABASE ... TEMPLATE`` copies the result in a fraction
    of a second. Dropped when the run ends; a template or server database left by a run
    that was killed carries its process id and is dropped by the next run."""
    if base in _TEMPLATES:
        return _TEMPLATES[base]
    import atexit

    import psycopg
    from psycopg import sql

    name = f"tierdesk_template_{os.getpid()}"
    with psycopg.connect(base, autocommit=True, connect_timeout=10) as conn:
        stale = conn.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE 'tierdesk\\_template\\_%'"
            " OR datname LIKE 'tierdesk\\_browser\\_%'"
        ).fetchall()
        for (old,) in stale:
            pid = old.split("_")[2]
            if pid.isdigit() and not _alive(int(pid)):
                _drop(conn, old)
        _drop(conn, name)
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))

    def drop() -> None:
        with (
            contextlib.suppress(Exception),
            psycopg.connect(base, autocommit=True, connect_timeout=10) as conn,
        ):
            _drop(conn, name)

    atexit.register(drop)
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"{name}.log"
    _manage(server_env(_with_db_name(base, name)), log, "migrate", "--noinput", "-v", "0")
    _TEMPLATES[base] = name
    return name


def _drop(conn: Any, name: str) -> None:
    from psycopg import sql

    conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def _server_database(tmp: Path, suffix: str = "") -> Iterator[str]:
    """A database of the server's own, already migrated (a copy of the run's template)."""
    base = os.environ.get("DATABASE_URL", "")
    if not _is_postgres(base):
        url = f"sqlite:///{tmp / f'browser{suffix}.sqlite3'}"
        _manage(server_env(url), tmp / "migrate.log", "migrate", "--noinput", "-v", "0")
        yield url
        return
    import psycopg
    from psycopg import sql

    template = _template_database(base)
    # Random beside the process id: two servers of one worker (a module's own server
    # while the session's runs) never share a name, so creating one never drops the
    # other's database under it.
    name = f"tierdesk_browser_{os.getpid()}_{secrets.token_hex(3)}{suffix}"
    # Connect to the run's own database just to create and drop ours (autocommit:
    # CREATE/DROP DATABASE cannot run in a transaction).
    with psycopg.connect(base, autocommit=True, connect_timeout=10) as conn:
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(template)
            )
        )
    try:
        yield _with_db_name(base, name)
    finally:
        with psycopg.connect(base, autocommit=True, connect_timeout=10) as conn:
            _drop(conn, name)


def _manage(env: dict[str, str], log: Path, *args: str) -> None:
    with log.open("a") as out:
        out.write(f"\n$ manage.py {' '.join(args)}\n")
        out.flush()
        proc = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=MANAGE_TIMEOUT_S,
            check=False,
        )
    if proc.returncode != 0:
        pytest.fail(f"manage.py {' '.join(args)} failed ({proc.returncode}):\n{_tail(log)}")


def _wait_healthy(proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"daphne exited with {proc.returncode} before answering:\n{_tail(log)}")
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.25)
    pytest.fail(f"daphne did not answer /healthz in {SERVER_START_TIMEOUT_S}s:\n{_tail(log)}")


def _warm_up(url: str, log: Path) -> None:
    """Answer one order question before the tests, as a shopper would ask it.

    A fresh process builds the router and loads the fast model on its first turn
    (about 20 s on 2 cores). Paying that here keeps the browser tests' waits about the
    widget. A failure is only logged: the tests then show what goes wrong.
    """
    from websockets.exceptions import WebSocketException
    from websockets.sync.client import connect
    from websockets.typing import Origin

    frames: list[str] = []
    started = time.monotonic()
    try:
        from chatbot.orders.identity import shopper_token_issue

        token: str | None = shopper_token_issue(customer_id="james_li_5688")
    except ImportError:
        token = None
    try:
        ws_url = url.replace("http", "ws", 1) + "/ws/chat/"
        with connect(ws_url, origin=Origin(url), open_timeout=15, close_timeout=5) as ws:
            frames.append(json.loads(ws.recv(timeout=15))["type"])
            if token:
                ws.send(json.dumps({"type": "identify", "token": token}))
            question = {"type": "message", "id": "warm-up", "text": "where is my order #W2611340?"}
            ws.send(json.dumps(question))
            deadline = started + WARMUP_TIMEOUT_S
            while time.monotonic() < deadline:
                frame = json.loads(ws.recv(timeout=max(0.1, deadline - time.monotonic())))
                frames.append(frame.get("type", "?"))
                if frame.get("type") in {"done", "error"} and frame.get("code") != "bad_token":
                    break
        outcome = "ok" if frames[-1] == "done" else "no done"
    except (WebSocketException, OSError, TimeoutError, ValueError) as exc:
        outcome = f"{type(exc).__name__}: {exc}"
    with log.open("a") as out:
        out.write(
            f"\n[browser tests] warm-up turn: {outcome} after "
            f"{time.monotonic() - started:.1f}s, frames {frames}\n"
        )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    # Its own process group (start_new_session): stop Daphne and anything it started.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=STOP_TIMEOUT_S)


def server_env(database_url: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a Daphne (or manage.py) subprocess on ``database_url``."""
    env = dict(os.environ)
    env.update(
        DATABASE_URL=database_url,
        DJANGO_SETTINGS_MODULE="config.settings",
        PYTHONUNBUFFERED="1",
    )
    # pytest-django's per-run test database name means nothing to the server.
    env.pop("TIERDESK_TEST_DB_NAME", None)
    # What the server keeps in Redis (rate limits, one-time-code quotas, locks) is its
    # own: an earlier run's keys (say, five codes already sent to Mei this hour) must
    # not decide this run.
    env["TIERDESK_STATE_PREFIX"] = f"tierdesk-live-{database_url.rsplit('/', 1)[-1]}-{os.getpid()}"
    # The browser tests drive the demo shop: its page signs the shopper in (/?as=...).
    env.setdefault("TIERDESK_DEMO_SHOP", "true")
    # The identity scenario is of a shop that lets a typed email read orders (off by
    # default): the email finds the shopper, and changing an order still needs the code.
    env.setdefault("TIERDESK_CHAT_IDENTITY_READS", "true")
    env.update(extra or {})
    return env


def daphne_start(
    env: dict[str, str], log: Path, *, port: int | None = None, args: Sequence[str] = ()
) -> tuple[subprocess.Popen[bytes], str]:
    """Daphne on ``port`` (default a free one) of 127.0.0.1, in its own process group,
    answering /healthz; ``args`` go before the application (``--proxy-headers``)."""
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    with log.open("a") as out:
        proc = subprocess.Popen(
            [
                _bin("daphne"),
                "-b",
                "127.0.0.1",
                "-p",
                str(port),
                *args,
                "config.asgi:application",
            ],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait_healthy(proc, url, log)
    except BaseException:
        _stop(proc)
        raise
    return proc, url


@contextlib.contextmanager
def live_server_run(
    tmp: Path,
    *,
    env_extra: dict[str, str] | None = None,
    name: str = "",
    warm_up: bool = True,
) -> Iterator[LiveServer]:
    """Create and seed the server's database, run Daphne, and undo both at the end.

    ``env_extra`` sets the server's own settings (e.g. the bot check); ``name`` keeps a
    second server's database apart from the first's; ``warm_up=False`` skips the first
    chat turn, for a server whose tests only use the admin pages."""
    log = tmp / "server.log"
    with _server_database(tmp, f"_{name}" if name else "") as database_url:
        env = server_env(database_url, env_extra)
        if SEED_COMMAND.exists():
            _manage(env, log, "seed_demo")
        proc, url = daphne_start(env, log)
        try:
            if warm_up:
                _warm_up(url, log)
            yield LiveServer(url=url, database_url=database_url, log=log)
        finally:
            _stop(proc)


def node_scenario(
    node: str, script: Path, server: LiveServer, scenario: str, *args: str, timeout_s: int = 300
) -> dict[str, Any]:
    """Run one scenario of a Chromium script (``--base``, ``--scenario``) and return the
    JSON object it prints last; fail with its error and the server's log otherwise."""
    cmd = [node, str(script), "--base", server.url, "--scenario", scenario, *args]
    try:
        proc = subprocess.run(
            cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{scenario}: node did not finish in {timeout_s}s: {exc.stdout!r}")
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    result: dict[str, Any] = json.loads(lines[-1]) if lines else {}
    if proc.returncode != 0 or not result.get("ok"):
        server_log = server.log.read_text(errors="replace")[-4000:]
        pytest.fail(
            f"{scenario} failed (exit {proc.returncode}): {result.get('error') or result}\n"
            f"stderr: {proc.stderr[-2000:]}\nserver log tail:\n{server_log}"
        )
    return result


def agent_create(server: LiveServer, username: str, *, first_name: str) -> None:
    """A support agent on ``server``'s database (password = username), idempotently:
    staff, in the "support agents" group the desk lets in."""
    code = (
        "from django.contrib.auth import get_user_model;"
        "from django.contrib.auth.models import Group;"
        "U = get_user_model();"
        f"u = U.objects.filter(username={username!r}).first() or U.objects.create_user("
        f"{username!r}, password={username!r}, is_staff=True, first_name={first_name!r});"
        "u.groups.add(Group.objects.get(name='support agents'))"
    )
    _manage(server_env(server.database_url), server.log, "shell", "-c", code)


def server_query(database_url: str, query: str, *params: object) -> list[tuple[Any, ...]]:
    """Rows from the server's own database (``%s`` placeholders, on SQLite too)."""
    if database_url.startswith("sqlite:///"):
        import sqlite3

        with sqlite3.connect(database_url.removeprefix("sqlite:///")) as conn:
            return conn.execute(query.replace("%s", "?"), params).fetchall()
    import psycopg

    with psycopg.connect(database_url, connect_timeout=10) as conn:
        return conn.execute(query, params).fetchall()
