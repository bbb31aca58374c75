"""Debian's nginx for the browser tests, running the shipped docs/deploy/nginx.conf.

``site_render`` is scripts/nginx_site.py's, the one scripts/production_shape.py runs:
it swaps only the deployment's values in the shipped file (listen and certificate:
plain HTTP here; server name, static path, upstream ports), each of which must be there
exactly once: when the shipped file changes shape, the test fails instead of quietly
testing something else.
``nginx_run`` starts nginx in the foreground of its own process group under
``timeout``, so it stops by itself even when the test run is killed, and stops it at
the end. The binary comes from scripts/browser-setup.sh (``apt-get install nginx``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from scripts import nginx_site

NGINX = Path("/usr/sbin/nginx")
SHIPPED = nginx_site.SHIPPED
START_TIMEOUT_S = 20
STOP_TIMEOUT_S = 10
# nginx ends itself after this long, whatever happens to the test run.
LIFETIME_S = 1800


def site_render(
    *, port: int, server_name: str, static_root: Path, upstream_ports: Sequence[int]
) -> str:
    """The shipped site with this machine's listen port, name, static files and Daphnes
    (plain HTTP), as scripts/production_shape.py renders it."""
    try:
        return nginx_site.site_render(
            port=port,
            server_name=server_name,
            static_root=static_root,
            upstream_ports=upstream_ports,
        )
    except nginx_site.SiteError as error:
        pytest.fail(str(error))


main_conf = nginx_site.main_conf


def _answers(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        return True
    return False


@contextlib.contextmanager
def nginx_run(prefix: Path, conf: str, port: int) -> Iterator[Path]:
    """nginx on ``conf`` until the block ends (and at most LIFETIME_S); yields its log dir."""
    if not NGINX.exists():
        message = f"{NGINX} is missing: run bash scripts/browser-setup.sh (apt-get install nginx)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    prefix.mkdir(parents=True, exist_ok=True)
    conf_path = prefix / "nginx.conf"
    conf_path.write_text(conf)
    check = subprocess.run(
        [str(NGINX), "-t", "-p", str(prefix), "-c", str(conf_path)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if check.returncode != 0:
        pytest.fail(f"nginx -t refused the configuration:\n{check.stderr}\n{conf}")
    out = (prefix / "nginx.out").open("a")
    proc = subprocess.Popen(
        [
            "timeout",
            "--signal=TERM",
            str(LIFETIME_S),
            str(NGINX),
            "-p",
            str(prefix),
            "-c",
            str(conf_path),
            "-g",
            "daemon off;",
        ],
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _answers(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                log = (prefix / "error.log").read_text(errors="replace")[-3000:]
                pytest.fail(f"nginx did not listen on {port}:\n{log}")
            time.sleep(0.1)
        yield prefix
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=STOP_TIMEOUT_S)
        out.close()
