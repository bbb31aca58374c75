"""Write routing/seed_data/seed_history.json: for each seed row, the hashes of every
value the seed files shipped in git history up to the commit that added seed hashes
(migration routing.0007_seed_hash). Run once, from a git checkout:

    .venv/bin/python scripts/seed_history.py

A database seeded before that commit has rows without a seed hash; the seed
(routing/seed.py) updates such a row when its values are one an earlier release shipped,
instead of keeping it as an admin's edit. Databases seeded since carry their hashes, so
the file never needs the seed files' later versions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FILES = {
    "rules": "routing/seed_data/rules.json",
    "intents": "routing/seed_data/intents.json",
    "templates": "routing/seed_data/templates.json",
}
MIGRATION = "routing/migrations/0007_seed_hash.py"


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout


def _version(commit: str) -> dict[str, Any] | None:
    """The three seed files at ``commit``, or None if one did not exist yet."""
    data: dict[str, Any] = {}
    for name, path in FILES.items():
        try:
            data[name] = json.loads(_git("show", f"{commit}:{path}"))
        except subprocess.CalledProcessError:
            return None
    return data


def main() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("TIERDESK_ENV", "test")
    import django

    django.setup()
    from routing.seed import SEED_DIR, shipped_hashes

    added = _git("log", "--diff-filter=A", "--format=%H", "--", MIGRATION).split()
    # The commit that added the migration shipped hashes with its seed: history is
    # what came before it.
    until = f"{added[-1]}~1" if added else "HEAD"
    commits = _git("log", "--format=%H", until, "--", *FILES.values()).split()
    history: dict[str, set[str]] = {}
    versions = 0
    for commit in commits:
        version = _version(commit)
        if version is None:
            continue
        versions += 1
        hashes = shipped_hashes(
            rules=version["rules"],
            intents=version["intents"]["intents"],
            templates=version["templates"],
        )
        for label, digest in hashes.items():
            history.setdefault(label, set()).add(digest)
    out = {
        "_comment": f"Written by scripts/seed_history.py from {versions} versions of the seed "
        "files before seed hashes (migration routing.0007_seed_hash): label -> the hashes "
        "of the values those releases shipped (routing/seed.py, seed_history).",
        **{label: sorted(digests) for label, digests in sorted(history.items())},
    }
    path = SEED_DIR / "seed_history.json"
    path.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(f"{path}: {len(history)} rows, {versions} versions")


if __name__ == "__main__":
    main()
