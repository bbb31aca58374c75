"""What the router trains on is product data (routing/seed_data/); the evaluation sets
and their code live under bench/ and the product never imports or reads them."""

from __future__ import annotations

import ast
from pathlib import Path

from routing.training_data import HANDOFF_READ_SETS, TRAIN_FILE, handoff_load, labelled_load

ROOT = Path(__file__).resolve().parents[2]
APPS = ("chatbot", "config", "desk", "frontend", "inference", "knowledge", "releases", "routing")


def test_the_training_files_are_seed_data_and_load() -> None:
    seed_data = ROOT / "routing" / "seed_data"
    for path in (TRAIN_FILE, *HANDOFF_READ_SETS):
        assert path.is_relative_to(seed_data), path
    assert labelled_load(TRAIN_FILE)
    assert all(handoff_load(path) for path in HANDOFF_READ_SETS)


def test_no_product_module_imports_bench_or_names_its_files() -> None:
    offenders = []
    for app in APPS:
        for path in (ROOT / app).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom):
                    names = [node.module or ""]
                else:
                    continue
                if any(name == "bench" or name.startswith("bench.") for name in names):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            if app != "routing":
                continue
            # The router's own code builds no path into bench/ or an eval/ folder.
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and node.value in ("bench", "eval"):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value!r}")
    assert not offenders, offenders
