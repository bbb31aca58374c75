"""The shipped docs/deploy/nginx.conf with one machine's values: what
scripts/production_shape.py runs and tests/browser/test_embed_nginx.py starts.

``site_render`` swaps only the deployment's values (listen address, certificate, server
name, static path, upstream ports), each of which must be in the file exactly once: when
the shipped file changes shape, it raises instead of quietly running something else.
``main_conf`` is the nginx.conf around the site, with every path under one prefix.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

SHIPPED = Path(__file__).resolve().parents[1] / "docs" / "deploy" / "nginx.conf"


class SiteError(ValueError):
    pass


def _swap(text: str, pattern: str, replacement: str) -> str:
    new, count = re.subn(pattern, replacement, text, flags=re.MULTILINE)
    if count != 1:
        raise SiteError(
            f"docs/deploy/nginx.conf: expected one line matching {pattern!r}, got {count}"
        )
    return new


def site_render(
    *,
    port: int,
    server_name: str,
    static_root: Path,
    upstream_ports: Sequence[int],
    tls: tuple[Path, Path] | None = None,
) -> str:
    """The shipped site on 127.0.0.1:``port`` with this name, static files and Daphnes;
    with ``tls`` (certificate, key) over TLS as shipped, else plain HTTP."""
    text = SHIPPED.read_text()
    if tls is None:
        text = _swap(text, r"^\s*listen 443 ssl http2;$", f"    listen 127.0.0.1:{port};")
        text = _swap(text, r"^\s*ssl_certificate /\S+;\n", "")
        text = _swap(text, r"^\s*ssl_certificate_key /\S+;\n", "")
    else:
        text = _swap(text, r"^\s*listen 443 ssl http2;$", f"    listen 127.0.0.1:{port} ssl http2;")
        text = _swap(text, r"^\s*ssl_certificate /\S+;$", f"    ssl_certificate {tls[0]};")
        text = _swap(text, r"^\s*ssl_certificate_key /\S+;$", f"    ssl_certificate_key {tls[1]};")
    text = _swap(text, r"^\s*server_name \S+;$", f"    server_name {server_name};")
    text = _swap(text, r"^\s*alias /\S+/static/;$", f"        alias {static_root}/;")
    servers = re.findall(r"^\s*server 127\.0\.0\.1:\d+ max_fails=0;\n", text, re.MULTILINE)
    if len(servers) < 2:
        raise SiteError("docs/deploy/nginx.conf: the upstream should list two Daphne processes")
    lines = "".join(f"    server 127.0.0.1:{p} max_fails=0;\n" for p in upstream_ports)
    return text.replace("".join(servers), lines, 1)


def main_conf(prefix: Path, site: Path, extra_servers: str = "") -> str:
    """nginx.conf around the site: every path under ``prefix``, nothing in /etc or /var
    but Debian's mime.types."""
    user = "user root;\n" if os.geteuid() == 0 else ""  # the files are the caller's
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
    # Which Daphne answered each proxied request.
    log_format upstream '$host "$request" $status upstream=$upstream_addr '
                        'origin=$http_origin acao=$sent_http_access_control_allow_origin';
    access_log {prefix / "access.log"} upstream;
{temp}
    include {site};
{extra_servers}
}}
"""
