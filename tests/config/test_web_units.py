"""Several Daphne processes per machine, and the deployment files agreeing with each
other. Each web unit takes its socket from systemd (fd 3) and logs no line per
connection; nginx passes WebSocket upgrades to every instance, serves /static/ from the
folder the units, the image and the compose file collect into, and passes `nginx -t` as
shipped; the compose file puts nginx in front of two Daphnes with no secret in it. (The
two-process run is ``make load``'s ``two_processes`` phase, and the shipped nginx.conf
runs for real in tests/browser/test_embed_nginx.py.)"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

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


def _unit_var_dir(name: str) -> str:
    unit = (DEPLOY / "systemd" / name).read_text()
    found = re.findall(r"^Environment=TIERDESK_VAR_DIR=(\S+)$", unit, re.MULTILINE)
    assert len(found) == 1, name
    return found[0]


def test_nginx_serves_static_files_where_the_units_and_the_image_collect_them() -> None:
    """collectstatic writes to $TIERDESK_VAR_DIR/static: every unit, the image and the
    compose file's nginx must agree on that folder, or /static/ answers 404."""
    conf = (DEPLOY / "nginx.conf").read_text()
    alias = re.findall(r"^\s*location /static/ \{[^}]*?alias (\S+);", conf, re.MULTILINE | re.S)
    assert len(alias) == 1
    units = sorted((DEPLOY / "systemd").glob("*.service"))
    var_dirs = {_unit_var_dir(unit.name) for unit in units}
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    image = re.search(r"^ENV TIERDESK_VAR_DIR=(\S+)", dockerfile, re.MULTILINE)
    assert image and var_dirs == {image.group(1)}
    (var_dir,) = var_dirs
    assert alias[0] == f"{var_dir}/static/"
    # The units may write only there (ProtectSystem=strict).
    for unit in units:
        text = unit.read_text()
        assert f"ReadWritePaths={var_dir}" in text or "ReadOnlyPaths=" in text, unit.name


def _compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())


def test_compose_runs_nginx_in_front_of_two_daphnes_with_the_shipped_conf() -> None:
    services = _compose()["services"]
    nginx = services["nginx"]
    assert "./nginx.conf:/etc/nginx/conf.d/tierdesk.conf:ro" in nginx["volumes"]
    conf = (DEPLOY / "nginx.conf").read_text()
    upstream = sorted(re.findall(r"server 127\.0\.0\.1:(\d+)", conf))
    daphnes = {
        name: service
        for name, service in services.items()
        if "daphne" in " ".join(service.get("command") or [])
    }
    assert len(daphnes) >= 2
    # Each Daphne is in nginx's network namespace on one of the upstream's ports.
    ports = sorted(s["command"][s["command"].index("-p") + 1] for s in daphnes.values())
    assert ports == upstream
    for service in daphnes.values():
        assert service["network_mode"] == "service:nginx"
        assert service["command"][service["command"].index("-b") + 1] == "127.0.0.1"
    # nginx reads collectstatic's output from the volume the release step writes.
    var_dir = _unit_var_dir("tierdesk-web@.service")
    assert f"tierdesk-var:{var_dir}:ro" in nginx["volumes"]
    assert f"tierdesk-var:{var_dir}" in services["release"]["volumes"]
    assert "collectstatic" in services["release"]["command"]
    for path in re.findall(r"ssl_certificate(?:_key)? (\S+);", conf):
        assert any(v.endswith(":" + str(Path(path).parent) + ":ro") for v in nginx["volumes"])


def test_compose_writes_no_secret_and_keys_the_exposed_model_server() -> None:
    text = (DEPLOY / "docker-compose.yml").read_text()
    services = _compose()["services"]
    assert services["postgres"]["environment"]["POSTGRES_PASSWORD"] == (
        "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}"
    )
    for name, service in services.items():
        url = (service.get("environment") or {}).get("DATABASE_URL")
        if url:
            assert "${POSTGRES_PASSWORD:?" in url, name
    # Every secret-looking variable is taken from the environment, never written here.
    for name, service in services.items():
        for variable, value in (service.get("environment") or {}).items():
            if any(word in variable for word in ("PASSWORD", "SECRET", "KEY")):
                assert str(value).startswith("${"), (name, variable)
    assert "tierdesk:tierdesk@" not in text
    models = services["models"]
    assert "0.0.0.0" in models["command"]
    assert models["environment"]["TIERDESK_MODEL_SERVER_API_KEY"].startswith(
        "${TIERDESK_MODEL_SERVER_API_KEY:?"
    )


def test_shipped_nginx_conf_passes_nginx_t(tmp_path: Path) -> None:
    """`nginx -t` on docs/deploy/nginx.conf as it ships (TLS listener and all); only the
    certificate is a throwaway one made here, at the shipped paths' file names."""
    nginx = Path("/usr/sbin/nginx")
    if not nginx.exists():
        message = f"{nginx} is missing: run bash scripts/browser-setup.sh"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    conf = (DEPLOY / "nginx.conf").read_text()
    for path in re.findall(r"ssl_certificate(?:_key)? (\S+);", conf):
        conf = conf.replace(f" {path};", f" {tmp_path / Path(path).name};")
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-subj", "/CN=chat.example.com", "-keyout", str(tmp_path / "privkey.pem")),
            *("-out", str(tmp_path / "fullchain.pem")),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    site = tmp_path / "tierdesk.conf"
    site.write_text(conf)
    main = tmp_path / "nginx.conf"
    main.write_text(
        f"pid {tmp_path / 'nginx.pid'};\nerror_log {tmp_path / 'error.log'};\n"
        "events {}\nhttp {\n    include /etc/nginx/mime.types;\n"
        f"    include {site};\n}}\n"
    )
    result = subprocess.run(
        [str(nginx), "-t", "-p", str(tmp_path), "-c", str(main)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "syntax is ok" in result.stderr and "test is successful" in result.stderr
