"""``manage.py modelserver``: serve the local models from their own process.

    python manage.py modelserver                    # every local role, ports 8090+
    python manage.py modelserver --roles fast --port 18200 --supervise

See ``inference.modelserver`` and docs/deployment.md ("The model server").
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from inference.modelserver import host_is_loopback, local_roles, serve, supervise


class Command(BaseCommand):
    help = "Serve the local GGUF models over llama.cpp's OpenAI-compatible HTTP listener."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--roles", default="", help="comma-separated roles (default: every local role)"
        )
        parser.add_argument(
            "--port",
            type=int,
            default=None,
            help="base port; role ports are base + 0/1/2 (default TIERDESK_MODEL_SERVER_PORT)",
        )
        parser.add_argument(
            "--host",
            default="127.0.0.1",
            help="address to listen on (127.0.0.1; any other needs TIERDESK_MODEL_SERVER_API_KEY)",
        )
        parser.add_argument(
            "--supervise",
            action="store_true",
            help="run the server as a child process and restart it whenever it dies",
        )
        parser.add_argument("--status-file", default="", help="JSON with pid and URLs when ready")
        parser.add_argument("--warmup", type=int, default=3, help="warm-up requests per role")
        parser.add_argument(
            "--lifetime", type=float, default=0, help="exit after this many seconds (tests)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not host_is_loopback(options["host"]) and not settings.TIERDESK_MODEL_SERVER_API_KEY:
            # Anyone who reaches the port would get free completions (and the prompts'
            # shop data in /slots): beyond this machine, only with a key.
            raise CommandError(
                f"modelserver --host {options['host']} listens beyond this machine: set "
                "TIERDESK_MODEL_SERVER_API_KEY (the web processes and workers send it), or "
                "keep the default 127.0.0.1 (docs/deployment.md, 'The model server')"
            )
        roles = [r for r in options["roles"].split(",") if r] or local_roles()
        unknown = sorted(set(roles) - set(local_roles()))
        if unknown:
            raise CommandError(f"no local model for {unknown}; local roles: {local_roles()}")
        if options["supervise"]:
            argv = [sys.executable, sys.argv[0], "modelserver", "--roles", ",".join(roles)]
            argv += ["--warmup", str(options["warmup"]), "--host", options["host"]]
            for name in ("port", "status_file"):
                if options[name]:
                    argv += [f"--{name.replace('_', '-')}", str(options[name])]
            sys.exit(supervise(argv, lifetime_s=options["lifetime"]))
        serve(
            roles,
            base_port=options["port"],
            host=options["host"],
            status_file=Path(options["status_file"]) if options["status_file"] else None,
            warmup=options["warmup"],
            lifetime_s=options["lifetime"],
        )
