"""Uploaded files on shared storage: STORAGES["default"] comes from
TIERDESK_MEDIA_STORAGE and TIERDESK_MEDIA_STORAGE_OPTIONS (config/settings/web.py).
Each case starts Python with its own environment (the settings are read once per
process). Django's in-memory storage stands in for an object store: no bucket is
reachable here, and what is tested is that every process's default storage is the
configured one, with its options."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = (
    "import django, json; django.setup(); "
    "from django.core.files.base import ContentFile; "
    "from django.core.files.storage import storages; s = storages['default']; "
    "name = s.save('knowledge/a.txt', ContentFile(b'returns policy')); "
    "print(json.dumps({'class': type(s).__module__ + '.' + type(s).__name__, "
    "'location': str(getattr(s, 'location', '')), 'read': s.open(name).read().decode()}))"
)


def probe(**env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("TIERDESK_MEDIA")}
    return subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=base | {"DJANGO_SETTINGS_MODULE": "config.settings", **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_default_storage_is_the_configured_class_with_its_options() -> None:
    result = probe(
        TIERDESK_MEDIA_STORAGE="django.core.files.storage.InMemoryStorage",
        TIERDESK_MEDIA_STORAGE_OPTIONS='{"location": "shared-media"}',
    )
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout.strip().splitlines()[-1])
    assert got["class"] == "django.core.files.storage.memory.InMemoryStorage"
    assert got["location"].endswith("shared-media")
    assert got["read"] == "returns policy"


def test_options_that_are_not_a_json_object_stop_start_up_naming_the_variable() -> None:
    for bad, says in (("{bucket", "is not valid JSON"), ('["a"]', "must be a JSON object")):
        result = probe(TIERDESK_MEDIA_STORAGE_OPTIONS=bad)
        assert result.returncode != 0
        assert f"TIERDESK_MEDIA_STORAGE_OPTIONS {says}" in result.stderr, result.stderr
