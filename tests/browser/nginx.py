"""Debian's nginx for the browser tests, running the shipped docs/deploy/nginx.conf.

``site_render`` swaps only the deployment's values in the shipped file (listen and
certificate: plain HTTP here; server name, static path, upstream ports), each of which
must be there exactly once: when the shipped file changes shape, the test fails instead
of quietly testing something else.
``nginx_run`` starts nginx in the foreground of its own process group under
``timeout``, so it stops by itself even when the test run is killed, and stops it at
the end. The binary comes from scripts/browser-setup.sh (``apt-get install nginx``).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

NGINX = Path("/usr/sbin/nginx")
SHIPPED = Path(__file__).resolve().parents[2] / "docs" / "deploy" / "nginx.conf"
START_TIMEOUT_S = 20
STOP_TIMEOUT_S = 10
# nginx ends itself after this long, whatever happens to the test run.
LIFETIME_S = 1800


def _swap(text: str, pattern: str, replacement: str) -> str:
    new, count = re.subn(pattern, replacement, text, flags=re.MULTILINE)
    if count != 1:
        pytest.fail(f"docs/deploy/nginx.conf: expected one line matching {pattern!r}, got {count}")
    return new


def site_render(
    *, port: int, server_name: str, static_root: Path, upstream_ports: Sequence[int]
) -> str:
    """The shipped site with this machine's listen port, name, static files and Daphnes."""
    text = SHIPPED.read_text()
    text = _swap(text, r"^\s*listen 443 ssl http2;$", f"    listen 127.0.0.1:{port};")
    text = _swap(text, r"^\s*ssl_certificate /\S+;\n", "")
    text = _swap(text, r"^\s*ssl_certificate_key /\S+;\n", "")
    text = _swap(text, r"^\s*server_name \S+;$", f"    server_name {server_name};")
    text = _swap(text, r"^\s*alias /\S+/static/;$", f"        alias {static_root}/;")
    servers = re.findall(r"^\s*server 127\.0\.0\.1:\d+ max_fails=0;\n", text, re.MULTILINE)
    if len(servers) < 2:
        pytest.fail("docs/deploy/nginx.conf: the upstream should list two Daphne processes")
    lines = "".join(f"    server 127.0.0.1:{p} max_fails=0;\n" for p in upstream_ports)
    return text.replace("".join(servers), lines, 1)


def main_conf(prefix: Path, site: Path, extra_servers: str) -> str:
    """nginx.conf around the site: every path under ``prefix``, nothing in /etc or /var."""
    user = "user root;\n" if os.geteuid() == 0 else ""  # the test's files are root's
    temp = "\n".join(
        f"    {kind}_temp_path {prefix / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return f"""{user}worker_processes 1;
pid {prefix / "nginx.pid"};
error_log {prefix / "error.log"} info;
events {{ worker_connections 256; }}
http {{
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    # Which Daphne answered each proxied request: the test checks both did.
    log_format upstream '$host "$request" $status upstream=$upstream_addr '
                        'origin=$http_origin acao=$sent_http_access_control_allow_origin';
    access_log {prefix / "access.log"} upstream;
{temp}
    include {site};
{extra_servers}
}}
"""


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
