"""No import cycles between the project's modules, lazy imports included.

The layers themselves are import-linter's contract in ``make lint`` (pyproject.toml).
This test finds every strongly connected component of the module import graph (grimp,
import-linter's graph builder) and allows only Django's model-signal registration:
``routing.models`` connects its post_save/post_delete receivers to
``routing.versioning.router_version_bump``, which reads ``RouterVersion``.
"""

from __future__ import annotations

import grimp

PACKAGES = (
    "config",
    "frontend",
    "desk",
    "chatbot",
    "releases",
    "routing",
    "knowledge",
    "shop",
    "inference",
)
ALLOWED = [{"routing.models", "routing.versioning"}]


def _cycles(graph: grimp.ImportGraph) -> list[set[str]]:
    """Tarjan's strongly connected components with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(component)

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def test_no_import_cycles_but_the_model_signal_registration() -> None:
    graph = grimp.build_graph(*PACKAGES, include_external_packages=False)
    assert len(graph.modules) > 100  # the whole project was read
    cycles = _cycles(graph)
    assert [c for c in cycles if c not in ALLOWED] == [], cycles


def test_the_checker_finds_a_cycle() -> None:
    """The check can fail: a graph with a lazy import back up is reported."""
    graph = grimp.ImportGraph()
    for module in ("a", "a.x", "a.y"):
        graph.add_module(module)
    graph.add_import(importer="a.x", imported="a.y")
    graph.add_import(importer="a.y", imported="a.x")
    assert _cycles(graph) == [{"a.x", "a.y"}]
