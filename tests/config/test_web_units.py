"""Issue #16 item 4: several Daphne processes per machine. Each web unit takes its
socket from systemd (fd 3) and logs no line per connection; nginx passes WebSocket
upgrades to every instance. (The two-process run itself is ``make load``'s
``two_processes`` phase: bench/load.py, ``DaphnePool``.)"""

from __future__ import annotations

import re
from pathlib import Path

DEPLOY = Path(__file__).resolve().parents[2] / "docs" / "deploy"


def test_web_service_takes_its_socket_from_the_socket_unit() -> None:
    service = (DEPLOY / "systemd" / "tierdesk-web@.service").read_text()
    socket = (DEPLOY / "systemd" / "tierdesk-web@.socket").read_text()
    assert "Requires=tierdesk-web@%i.socket" in service
    exec_start = re.search(r"^ExecStart=(.+)$", service, re.MULTILINE)
    assert exec_start and "--fd 3" in exec_start.group(1) and "-v 0" in exec_start.group(1)
    assert "ListenStream=127.0.0.1:%i" in socket


def test_every_web_command_turns_the_per_connection_log_off() -> None:
    for name in ("Procfile", "docker-compose.yml", "Dockerfile"):
        text = (DEPLOY / name).read_text()
        lines = [line for line in text.splitlines() if "daphne" in line and "asgi" in line]
        assert lines, name
        assert all("-v 0" in line or '"-v", "0"' in line for line in lines), name


def test_nginx_passes_websocket_upgrades_to_every_web_process() -> None:
    conf = (DEPLOY / "nginx.conf").read_text()
    assert "proxy_set_header Upgrade $http_upgrade;" in conf
    assert "proxy_set_header Connection $connection_upgrade;" in conf
    servers = re.findall(r"server 127\.0\.0\.1:(\d+)", conf)
    assert len(servers) >= 2 and len(set(servers)) == len(servers)
