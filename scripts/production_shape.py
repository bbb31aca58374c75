"""Run the production shape on one machine without systemd or Docker: the release step,
Debian's nginx on the shipped docs/deploy/nginx.conf (TLS, rendered by
scripts/nginx_site.py as tests/browser/test_embed_nginx.py renders it), two Daphne
processes behind it with ``--proxy-headers`` (the command of
docs/deploy/systemd/tierdesk-web@.service, bound to the conf's ports 8001 and 8002), a
Celery worker and Celery beat (the worker and beat units' commands), over the
PostgreSQL and Redis of ``DATABASE_URL`` and ``REDIS_URL``.

    .venv/bin/python scripts/production_shape.py up      # release step, then start all
    .venv/bin/python scripts/production_shape.py check   # health, static, both Daphnes, Celery
    .venv/bin/python scripts/production_shape.py down    # stop what ``up`` started

The environment is the production one (``TIERDESK_ENV=production``, the keys, the hosts;
docs/deployment.md). Everything it writes goes under ``TIERDESK_VAR_DIR``: the collected
static files, ``tls/`` (a self-signed certificate for ``--name`` unless
``TIERDESK_TLS_CERT`` and ``TIERDESK_TLS_KEY`` name one), ``nginx/``, ``run/`` (pid
files) and ``log/``. The model server is not started: replies that plan a model send
their degraded text until one runs (``manage.py modelserver``, docs/deployment.md).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.nginx_site import main_conf, site_render

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / ".venv" / "bin"
NGINX = "/usr/sbin/nginx"
DAPHNE_PORTS = (8001, 8002)  # the shipped conf's upstream
REQUIRED = ("DATABASE_URL", "REDIS_URL", "DJANGO_SECRET_KEY", "TIERDESK_SHOPPER_TOKEN_KEY")


def _var() -> Path:
    return Path(os.environ.get("TIERDESK_VAR_DIR", "/var/lib/tierdesk"))


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("TIERDESK_ENV", "production")
    env.setdefault("TIERDESK_VAR_DIR", str(_var()))
    env.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    env["PYTHONPATH"] = str(ROOT)
    missing = [name for name in REQUIRED if not env.get(name)]
    if missing:
        sys.exit(f"set {', '.join(missing)} first (docs/deployment.md)")
    return env


def _run(env: dict[str, str], *cmd: str) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=ROOT, env=env, check=True)


def _start(env: dict[str, str], name: str, *cmd: str) -> None:
    var = _var()
    (var / "run").mkdir(parents=True, exist_ok=True)
    (var / "log").mkdir(parents=True, exist_ok=True)
    print("+", " ".join(cmd), "&", flush=True)
    with (var / "log" / f"{name}.log").open("a") as log:
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    (var / "run" / f"{name}.pid").write_text(str(proc.pid))


def _tls(name: str) -> tuple[Path, Path]:
    given = os.environ.get("TIERDESK_TLS_CERT"), os.environ.get("TIERDESK_TLS_KEY")
    if given[0] and given[1]:
        return Path(given[0]), Path(given[1])
    tls = _var() / "tls"
    cert, key = tls / "fullchain.pem", tls / "privkey.pem"
    if not cert.exists():
        tls.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30"),
                *("-subj", f"/CN={name}", "-addext", f"subjectAltName=DNS:{name}"),
                *("-keyout", str(key), "-out", str(cert)),
            ],
            check=True,
            capture_output=True,
        )
    return cert, key


def up(args: argparse.Namespace) -> None:
    env = _env()
    manage = (str(BIN / "python"), "manage.py")
    # The release step (the Procfile's release: line, but models_assemble: no model server).
    _run(env, *manage, "migrate", "--noinput")
    _run(env, *manage, "collectstatic", "--noinput")
    _run(env, *manage, "check", "--deploy", "--fail-level", "WARNING")
    for port in DAPHNE_PORTS:
        daphne = (str(BIN / "daphne"), "-b", "127.0.0.1", "-p", str(port))
        _start(env, f"web-{port}", *daphne, "-v", "0", "--proxy-headers", "config.asgi:application")
    celery = (str(BIN / "celery"), "-A", "config")
    _start(env, "worker", *celery, "worker", "-Q", "celery,bulk", "--concurrency=1")
    schedule = _var() / "celerybeat-schedule"
    _start(env, "beat", *celery, "beat", "--schedule", str(schedule))
    prefix = _var() / "nginx"
    prefix.mkdir(parents=True, exist_ok=True)
    site = prefix / "tierdesk.conf"
    site.write_text(
        site_render(
            port=args.port,
            server_name=args.name,
            static_root=_var() / "static",
            upstream_ports=DAPHNE_PORTS,
            tls=_tls(args.name),
        )
    )
    conf = prefix / "nginx.conf"
    conf.write_text(main_conf(prefix, site))
    _run(env, NGINX, "-t", "-p", str(prefix), "-c", str(conf))
    _run(env, NGINX, "-p", str(prefix), "-c", str(conf))  # daemonises; pid in nginx.pid
    print(f"up: https://{args.name}:{args.port}/ (logs in {_var() / 'log'})")


def _get(url: str, name: str, port: int, headers: dict[str, str]) -> tuple[int, dict, bytes]:
    """GET through nginx at 127.0.0.1:port with the Host and SNI of ``name``."""
    context = ssl.create_default_context(cafile=str(_tls(name)[0]))
    context.check_hostname = False  # the address is 127.0.0.1; the Host header is ``name``
    request = urllib.request.Request(
        f"https://127.0.0.1:{port}{url}", headers={"Host": f"{name}:{port}", **headers}
    )
    with urllib.request.urlopen(request, context=context, timeout=30) as response:
        return response.status, dict(response.headers), response.read()


def check(args: argparse.Namespace) -> None:
    env = _env()
    deadline = time.monotonic() + args.wait
    while True:
        try:
            status, _, body = _get("/healthz", args.name, args.port, {})
            break
        except OSError as error:
            if time.monotonic() > deadline:
                sys.exit(f"no answer through nginx: {error}")
            time.sleep(2)
    print(f"/healthz {status} {body[:80]!r}")
    origin = {"Origin": "https://www.example.com"}
    status, headers, _ = _get("/static/tierdesk/widget.js", args.name, args.port, origin)
    acao = headers.get("Access-Control-Allow-Origin")
    print(f"/static/tierdesk/widget.js {status}, Access-Control-Allow-Origin: {acao}")
    for _ in range(6):
        _get("/healthz", args.name, args.port, {})
    log = (_var() / "nginx" / "access.log").read_text()
    used = sorted({p for p in DAPHNE_PORTS if f"upstream=127.0.0.1:{p}" in log})
    print(f"Daphnes that answered through nginx: {used}")
    ping = subprocess.run(
        [str(BIN / "celery"), "-A", "config", "inspect", "ping", "--timeout", "10", "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    replies = json.loads(ping.stdout.strip().splitlines()[-1]) if ping.returncode == 0 else []
    print(f"Celery workers answering: {len(replies)}")
    beat = _var() / "run" / "beat.pid"
    beat_alive = beat.exists() and _alive(int(beat.read_text()))
    print(f"Celery beat running: {beat_alive}")
    if status != 200 or acao != "*" or used != list(DAPHNE_PORTS) or not replies or not beat_alive:
        sys.exit("check failed")
    print("check: ok")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def down(args: argparse.Namespace) -> None:
    prefix = _var() / "nginx"
    with contextlib.suppress(FileNotFoundError, ProcessLookupError, ValueError):
        os.kill(int((prefix / "nginx.pid").read_text()), signal.SIGQUIT)
    for pid_file in sorted((_var() / "run").glob("*.pid")):
        pid = int(pid_file.read_text())
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
            print(f"stopped {pid_file.stem} ({pid})")
        pid_file.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("up", "check", "down"))
    parser.add_argument("--name", default="chat.localhost", help="nginx's server_name")
    parser.add_argument("--port", type=int, default=8443, help="nginx's TLS port")
    parser.add_argument("--wait", type=float, default=120, help="check: seconds to wait")
    args = parser.parse_args()
    {"up": up, "check": check, "down": down}[args.action](args)


if __name__ == "__main__":
    main()
