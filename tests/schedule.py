"""The order the suite's files run in, longest first, so that the two xdist workers end
together (``make test`` runs ``--dist loadfile --no-loadscope-reorder``).

xdist hands out whole files in collection order. Its default reorder puts the files
with the most tests first, which leaves a long single-test file (a fault test, a
browser walkthrough) for the end, on one worker while the other idles. Here each file
is weighed by its measured seconds in ``tests/durations.json``; a file not measured yet
is weighed by its markers. ``make test-durations`` measures them again.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

DURATIONS = Path(__file__).resolve().parent / "durations.json"
# Seconds per test for a file not in DURATIONS, by its heaviest marker.
GUESS_S = {"browser": 40.0, "models": 10.0}
OTHER_S = 0.5


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _measured() -> dict[str, float]:
    try:
        data = json.loads(DURATIONS.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    return {str(k): float(v) for k, v in data.get("files", {}).items()}


def _guess(item: pytest.Item) -> float:
    for marker, seconds in GUESS_S.items():
        if item.get_closest_marker(marker) is not None:
            return seconds
    return OTHER_S


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--durations-write",
        action="store_true",
        help="Write each file's seconds to tests/durations.json at the end of the run.",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    measured = _measured()
    weight: dict[str, float] = defaultdict(float)
    for item in items:
        name = file_of(item.nodeid)
        if name not in measured:
            weight[name] += _guess(item)
    for name, seconds in measured.items():
        weight[name] = seconds
    first_seen = {file_of(item.nodeid): i for i, item in reversed(list(enumerate(items)))}
    # Stable within a file; files longest first, ties in collection order.
    items.sort(
        key=lambda item: (
            -weight[file_of(item.nodeid)],
            first_seen[file_of(item.nodeid)],
        )
    )


class _Recorder:
    """Sums each file's setup, call and teardown seconds, on the controller (with xdist
    the workers' reports arrive here)."""

    def __init__(self) -> None:
        self.files: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.files[file_of(report.nodeid)] += report.duration

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: Any) -> None:
        # A failed test's seconds are still its file's: written whatever the outcome.
        if not self.files:
            return
        files = {name: round(s, 1) for name, s in sorted(self.files.items())}
        DURATIONS.write_text(
            json.dumps({"files": files}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )


def pytest_configure(config: pytest.Config) -> None:
    is_worker = hasattr(config, "workerinput")
    if config.getoption("--durations-write") and not is_worker:
        config.pluginmanager.register(_Recorder(), "tierdesk-durations")
