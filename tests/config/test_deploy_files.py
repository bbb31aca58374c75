"""Issue #18 items 7 and 8: the deployment files keep secrets and data out of the
image, run it unprivileged and assemble the models on release; the declared Python
range is the one docs/deployment.md documents.

The image itself is not built here: docs/deployment.md, "Docker", says why."""

from __future__ import annotations

import fnmatch
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "docs" / "deploy"


def ignored(path: str) -> bool:
    """Docker's rules, as far as this file uses them: the last matching line wins."""
    verdict = False
    for line in (ROOT / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        pattern = line.lstrip("!").rstrip("/")
        parts = path.split("/")
        if any(
            fnmatch.fnmatch("/".join(parts[: i + 1]), pattern) for i in range(len(parts))
        ) or fnmatch.fnmatch(path, pattern.removeprefix("**/")):
            verdict = not negate
    return verdict


def test_secrets_virtualenv_and_data_stay_out_of_the_image() -> None:
    for path in (
        ".env",
        ".env.production",
        ".venv/bin/python",
        "var/tierdesk.sqlite3",
        "var/models/x.gguf",
        ".git/config",
    ):
        assert ignored(path), path
    for path in (".env.example", "manage.py", "chatbot/models.py", "requirements/constraints.txt"):
        assert not ignored(path), path


def test_image_runs_as_an_unprivileged_user() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    users = re.findall(r"^USER\s+(\S+)", dockerfile, re.MULTILINE)
    assert users and users[-1] not in {"root", "0"}
    # The user is created, and only the data folder is handed to it.
    assert f"useradd --system --gid {users[-1]}" in dockerfile
    assert f"chown -R {users[-1]}:{users[-1]} /var/lib/tierdesk" in dockerfile


def test_release_step_assembles_and_checks_the_models() -> None:
    release = next(
        line
        for line in (DEPLOY / "Procfile").read_text().splitlines()
        if line.startswith("release:")
    )
    for step in ("migrate --noinput", "collectstatic --noinput", "models_assemble"):
        assert step in release


def test_python_range_is_311_to_313() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == ">=3.11,<3.14"
    assert "3.11 to 3.13" in (ROOT / "docs" / "deployment.md").read_text()
