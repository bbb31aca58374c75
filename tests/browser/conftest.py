"""Fixtures for the browser tests: the tools, and a live Daphne server (live.py)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from .live import CHROMIUM, REPO, LiveServer, live_server_run


@pytest.fixture(scope="session")
def browser_tools() -> str:
    """The node binary, once Chromium and playwright-core are there (scripts/browser-setup.sh)."""
    node = shutil.which("node")
    missing = [
        what
        for what, ok in (
            ("node", node is not None),
            (str(CHROMIUM), CHROMIUM.exists()),
            ("node_modules/playwright-core", (REPO / "node_modules" / "playwright-core").is_dir()),
        )
        if not ok
    ]
    if missing:
        message = f"browser tests need {', '.join(missing)}: run bash scripts/browser-setup.sh"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    assert node is not None
    return node


@pytest.fixture(scope="session")
def daphne_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server_run(tmp_path_factory.mktemp("daphne")) as server:
        yield server


@pytest.fixture(scope="session")
def botcheck_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A second server with the bot check enforcing, as in production (test runs
    default to off: the suite's WebSocket tests send no fingerprint)."""
    with live_server_run(
        tmp_path_factory.mktemp("daphne-botcheck"),
        env_extra={"TIERDESK_BOTCHECK": "enforce"},
        name="botcheck",
    ) as server:
        yield server
