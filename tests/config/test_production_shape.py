"""scripts/production_shape.py, the production shape without systemd or Docker that
docs/deployment.md shows ("Run the production shape here"): it runs the units' own
commands and nginx on the shipped conf rendered by the same code as the cross-origin
browser test (scripts/nginx_site.py), and that rendering passes Debian's ``nginx -t``
over TLS. (The whole shape was run by hand; docs/deployment.md has what it printed.)"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from scripts import nginx_site, production_shape
from tests.browser import nginx as browser_nginx

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "docs" / "deploy"


def _exec_start(unit: str) -> list[str]:
    text = (DEPLOY / "systemd" / unit).read_text()
    found = re.search(r"^ExecStart=(.+)$", text, re.MULTILINE)
    assert found, unit
    return shlex.split(found.group(1))


def test_the_script_runs_the_units_commands() -> None:
    source = (ROOT / "scripts" / "production_shape.py").read_text()
    web = _exec_start("tierdesk-web@.service")
    # The web unit's Daphne, bound to a port where systemd would pass fd 3.
    flags = [a for a in web[1:] if a not in ("--fd", "3")]
    assert flags == ["-v", "0", "--proxy-headers", "config.asgi:application"]
    assert '"-v", "0", "--proxy-headers", "config.asgi:application"' in source
    worker = _exec_start("tierdesk-worker.service")
    assert worker[1:5] == ["-A", "config", "worker", "-Q"] and "celery,bulk" in worker
    assert '"worker", "-Q", "celery,bulk"' in source
    conf = (DEPLOY / "nginx.conf").read_text()
    ports = tuple(int(p) for p in re.findall(r"server 127\.0\.0\.1:(\d+) max_fails", conf))
    assert ports == production_shape.DAPHNE_PORTS


def test_the_browser_test_and_the_script_render_the_conf_the_same_way(tmp_path: Path) -> None:
    kwargs = {
        "port": 8443,
        "server_name": "chat.localhost",
        "static_root": tmp_path / "static",
        "upstream_ports": (8001, 8002),
    }
    assert browser_nginx.site_render(**kwargs) == nginx_site.site_render(**kwargs)  # type: ignore[arg-type]
    assert browser_nginx.main_conf is nginx_site.main_conf


def test_the_tls_rendering_passes_nginx_t(tmp_path: Path) -> None:
    if not Path(browser_nginx.NGINX).exists():
        pytest.skip("no nginx: bash scripts/browser-setup.sh")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-subj", "/CN=chat.localhost", "-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
    )
    site_text = nginx_site.site_render(
        port=8443,
        server_name="chat.localhost",
        static_root=tmp_path / "static",
        upstream_ports=(8001, 8002),
        tls=(cert, key),
    )
    assert "listen 127.0.0.1:8443 ssl http2;" in site_text
    assert f"ssl_certificate {cert};" in site_text and f"alias {tmp_path}/static/;" in site_text
    site = tmp_path / "tierdesk.conf"
    site.write_text(site_text)
    conf = tmp_path / "nginx.conf"
    conf.write_text(nginx_site.main_conf(tmp_path, site))
    check = subprocess.run(
        [str(browser_nginx.NGINX), "-t", "-p", str(tmp_path), "-c", str(conf)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, check.stderr


def test_a_conf_of_another_shape_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    odd = tmp_path / "nginx.conf"
    odd.write_text(nginx_site.SHIPPED.read_text().replace("listen 443 ssl http2;", "listen 80;"))
    monkeypatch.setattr(nginx_site, "SHIPPED", odd)
    with pytest.raises(nginx_site.SiteError, match="listen 443"):
        nginx_site.site_render(port=1, server_name="x", static_root=tmp_path, upstream_ports=(1, 2))
