"""Issue #18 item 5: `.env.example` can be copied to `.env` as it is.

The settings are read once per process, so each case starts Python in a subprocess
with a clean environment and prints the settings as JSON. `.env.example` says every
value it shows is the default: loading it must give exactly the settings of no file
at all (inline comments are not values, `KEY=` means unset)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

DUMP = (
    "import json, config.settings as s; "
    "print(json.dumps({k: getattr(s, k) for k in dir(s) if k.isupper()},"
    " default=str, sort_keys=True))"
)


def settings_with(env_file: str, **env: str) -> dict[str, Any]:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "TIERDESK_", "CELERY_"))
        and k not in ("DATABASE_URL", "REDIS_URL")
    }
    result = subprocess.run(
        [sys.executable, "-c", DUMP],
        cwd=ROOT,
        env=base | {"TIERDESK_ENV_FILE": env_file, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    loaded: dict[str, Any] = json.loads(result.stdout)
    return loaded


def test_env_example_as_shipped_gives_the_default_settings() -> None:
    defaults = settings_with(os.devnull)
    from_file = settings_with(str(ROOT / ".env.example"))
    assert from_file.pop("ENV_FILE") == str(ROOT / ".env.example")
    assert defaults.pop("ENV_FILE") is None
    names = defaults.keys() | from_file.keys()
    differing = {k for k in names if defaults.get(k) != from_file.get(k)}
    assert differing == set()
    # The values the hand-written loader got wrong, spelled out.
    assert from_file["TIERDESK_ENV"] == "development"
    assert from_file["SECRET_KEY"] and "#" not in from_file["SECRET_KEY"]
    assert from_file["ALLOWED_HOSTS"] == ["127.0.0.1", "localhost", "testserver"]


def test_real_environment_wins_over_the_file(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text(
        "TIERDESK_MAX_MESSAGE_CHARS=1500   # a comment\n"
        'TIERDESK_METRICS_TOKEN="quoted $value # kept"\n'
        "TIERDESK_ROUTING=l3_only\n"
    )
    loaded = settings_with(str(env_file), TIERDESK_ROUTING="tiered")
    assert loaded["TIERDESK_MAX_MESSAGE_CHARS"] == 1500
    # Quoted values are literal: no ${VAR} expansion, and "#" inside quotes stays.
    assert loaded["TIERDESK_METRICS_TOKEN"] == "quoted $value # kept"
    assert loaded["TIERDESK_ROUTING"] == "tiered"
