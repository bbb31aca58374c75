"""Servers of our own for the fault-injection tests: things a test may kill or restart.

- ``PrivateRedis``: a redis-server on a free 127.0.0.1 port, to stop and start again;
- ``PrivatePostgres``: a throwaway cluster (initdb in a temporary folder, its own port),
  so the machine's PostgreSQL is never touched;
- ``Daphne``: a real Daphne subprocess that can be killed with SIGKILL and started
  again on the same port, as a supervisor would;
- ``CeleryWorker``: a real ``celery worker`` subprocess, the same.

Every wait is bounded and everything listens on 127.0.0.1 only.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import psycopg

from tests.browser.live import REPO, _stop, _warm_up, daphne_start
from tests.net import free_port

PG_BIN = next(iter(sorted(Path("/usr/lib/postgresql").glob("*/bin"))), None)


class PrivateRedis:
    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.start()

    def _cli(self, *args: str) -> str:
        done = subprocess.run(
            ["redis-cli", "-p", str(self.port), *args], capture_output=True, text=True, timeout=10
        )
        return done.stdout

    def start(self) -> None:
        subprocess.run(
            [
                shutil.which("redis-server") or "redis-server",
                "--daemonize",
                "yes",
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            timeout=30,
        )
        for _ in range(50):
            if self.ping():
                return
            time.sleep(0.05)
        raise RuntimeError("private redis-server did not start")

    def ping(self) -> bool:
        return self._cli("ping").strip() == "PONG"

    def blocked_commands(self) -> list[str]:
        """The commands of the clients connected now (``CLIENT LIST``'s ``cmd=``)."""
        return [
            field.removeprefix("cmd=")
            for line in self._cli("client", "list").splitlines()
            for field in line.split()
            if field.startswith("cmd=")
        ]

    def stop(self) -> None:
        self._cli("shutdown", "nosave")
        for _ in range(50):
            if not self.ping():
                return
            time.sleep(0.05)


class PrivatePostgres:
    def __init__(self) -> None:
        assert PG_BIN is not None, "PostgreSQL server binaries are not installed"
        # initdb refuses to run as root; the cluster belongs to the postgres user.
        self.dir = Path(tempfile.mkdtemp(prefix="tierdesk-pg-"))
        self.dir.chmod(0o777)
        self.port = free_port()
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


class Daphne:
    """A Daphne subprocess; ``kill9`` then ``start`` brings it back on the same port."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.env, self.log = env, log
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.port: int | None = None

    def start(self, *, warm_up: bool = True) -> None:
        self.proc, self.url = daphne_start(self.env, self.log, port=self.port)
        self.port = int(self.url.rsplit(":", 1)[1])
        if warm_up:
            _warm_up(self.url, self.log)

    def kill9(self) -> None:
        assert self.proc is not None
        # The whole process group: Daphne and any model worker it started.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=15)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.alive():
            assert self.proc is not None
            _stop(self.proc)


class CeleryWorker:
    """``celery -A APP worker`` (one prefork child) in its own process group, logging to
    ``log``; ``kill9`` takes the children too, and ``start`` runs a new one."""

    def __init__(
        self, env: dict[str, str], log: Path, *, app: str = "config", extra: Sequence[str] = ()
    ) -> None:
        self.env, self.log, self.app, self.extra = env, log, app, list(extra)
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        command = [sys.executable, "-m", "celery", "-A", self.app, "worker", *self.extra]
        if "-Q" not in self.extra:
            # Both queues, as a deployment's single worker takes them: the demo seed's
            # articles go to the bulk queue.
            from django.conf import settings

            queues = f"{settings.CELERY_TASK_DEFAULT_QUEUE},{settings.TIERDESK_KB_BULK_QUEUE}"
            command += ["-Q", queues]
        command += ["--concurrency=1", "--pool=prefork", "--loglevel=INFO"]
        command += ["--without-gossip", "--without-mingle"]
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                command,
                cwd=REPO,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def kill9(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait(timeout=15)


def until(predicate: Callable[[], bool], timeout_s: float) -> bool:
    """Poll ``predicate`` every 0.2 s; False if it never held within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if predicate():
                return True
        except psycopg.OperationalError:
            pass  # the database is restarting: ask again
        time.sleep(0.2)
    return False
