"""House rules a newcomer relies on, checked from the files alone (no database).

- every app module has a line in docs/architecture.md's module table;
- no app module over 600 lines, no function over 80, no widget/desk script over 600,
  unless docs/architecture.md's "Size exceptions" names it;
- product code does not import or read an evaluation set or the benchmarks;
- README.md is short and starts with its title;
- app code does not narrate history or point at files outside the repository;
- the docs name only make targets the Makefile has, and modules that exist;
- no private name is imported from one app module into another.

"App module": a ``.py`` file of one of the nine apps, outside ``migrations/``, except an
``__init__.py`` with no code (empty, or a docstring only).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = (
    "chatbot",
    "config",
    "desk",
    "frontend",
    "inference",
    "knowledge",
    "releases",
    "routing",
    "shop",
)
ARCHITECTURE = ROOT / "docs" / "architecture.md"
SCRIPT_DIRS = (ROOT / "frontend" / "static", ROOT / "desk" / "static")

MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
MAX_SCRIPT_LINES = 600
MAX_README_LINES = 250


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _app_files(*suffixes: str) -> list[Path]:
    found: list[Path] = []
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*")):
            if path.suffix not in suffixes or not path.is_file():
                continue
            parts = path.relative_to(ROOT).parts
            if "migrations" in parts or "node_modules" in parts or "__pycache__" in parts:
                continue
            found.append(path)
    return found


def _has_code(path: Path) -> bool:
    body = ast.parse(path.read_text(encoding="utf-8")).body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    return bool(body)


def app_modules() -> list[Path]:
    """The app modules, by the rule in this module's docstring."""
    return [p for p in _app_files(".py") if p.name != "__init__.py" or _has_code(p)]


def _section(markdown: str, title: str) -> str:
    """The text under the ``## title`` heading, up to the next heading of level 1 or 2."""
    match = re.search(rf"^## {re.escape(title)}\s*$(.*?)(?=^#{{1,2}} |\Z)", markdown, re.M | re.S)
    return match.group(1) if match else ""


def size_exceptions() -> set[str]:
    """The first column of the "Size exceptions" table: ``path`` or ``path:function``
    (a method as ``path:Class.method``)."""
    names: set[str] = set()
    for line in _section(ARCHITECTURE.read_text(encoding="utf-8"), "Size exceptions").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.lstrip().startswith("|") or len(cells) < 3:
            continue
        name = cells[0].strip("`").strip()
        if name and name != "path" and not set(name) <= {"-", ":", " "}:
            names.add(name)
    return names


def _functions(tree: ast.AST) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function and method with its qualified name (``Class.method``, ``outer.inner``)."""
    found: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((prefix + child.name, child))
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


# --- (a) the module table -----------------------------------------------------------


def test_every_app_module_has_a_line_in_architecture() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    missing = [_rel(p) for p in app_modules() if f"`{_rel(p)}`" not in text]
    assert not missing, (
        "app modules without a line in docs/architecture.md (add a row to its app's "
        "table, path in backticks):\n" + "\n".join(missing)
    )


def test_architecture_names_only_modules_that_exist() -> None:
    """A row for a module that was renamed or removed is a wrong sign on the door."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    apps = "|".join(APPS)
    named = set(re.findall(rf"`((?:{apps})/[\w/]+\.py)`", text))
    stale = sorted(n for n in named if not (ROOT / n).is_file())
    assert not stale, "docs/architecture.md names modules that do not exist:\n" + "\n".join(stale)


# --- (b) size limits ----------------------------------------------------------------


def _size_offenders() -> list[str]:
    excepted = size_exceptions()
    offenders: list[str] = []
    for path in app_modules():
        rel = _rel(path)
        source = path.read_text(encoding="utf-8")
        lines = len(source.splitlines())
        if lines > MAX_MODULE_LINES and rel not in excepted:
            offenders.append(f"{rel}: {lines} lines (limit {MAX_MODULE_LINES})")
        for qualname, node in _functions(ast.parse(source)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length <= MAX_FUNCTION_LINES:
                continue
            if f"{rel}:{qualname}" in excepted or f"{rel}:{node.name}" in excepted:
                continue
            offenders.append(f"{rel}:{qualname}: {length} lines (limit {MAX_FUNCTION_LINES})")
    for directory in SCRIPT_DIRS:
        for path in sorted(directory.rglob("*.js")):
            rel = _rel(path)
            lines = len(path.read_text(encoding="utf-8").splitlines())
            if lines > MAX_SCRIPT_LINES and rel not in excepted:
                offenders.append(f"{rel}: {lines} lines (limit {MAX_SCRIPT_LINES})")
    return offenders


def test_size_limits_or_a_named_exception() -> None:
    offenders = _size_offenders()
    assert not offenders, (
        "over the size limits without a row in docs/architecture.md, "
        '"Size exceptions" (split it, or name it there with why):\n' + "\n".join(offenders)
    )


def test_size_exceptions_name_files_that_exist() -> None:
    stale = sorted(n for n in size_exceptions() if not (ROOT / n.split(":")[0]).is_file())
    assert not stale, 'docs/architecture.md "Size exceptions" names missing files:\n' + "\n".join(
        stale
    )


# --- (c) evaluation data stays out of the product -------------------------------------


def _is_eval_module(name: str) -> bool:
    parts = name.split(".")
    evaluation = any(p == "eval" or p.startswith("eval_") for p in parts)
    return parts[0] in ("bench", "tests") or evaluation


def _docstring_nodes(tree: ast.AST) -> set[int]:
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def _evaluation_uses(path: Path) -> list[str]:
    rel = _rel(path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = _docstring_nodes(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
            if not _is_eval_module(node.module):  # from routing import eval
                names += [f"{node.module}.{a.name}" for a in node.names]
        else:
            names = []
        bad = sorted({n for n in names if _is_eval_module(n)})
        if bad and isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(f"{rel}:{node.lineno}: imports {', '.join(bad)}")
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and (
                node.value in ("eval", "bench")
                or re.search(r"(^|/)(eval|bench)/", node.value) is not None
            )
        ):
            found.append(f"{rel}:{node.lineno}: reads a path under eval/ or bench/: {node.value!r}")
    return found


def test_product_code_uses_no_evaluation_set() -> None:
    found: list[str] = []
    for path in app_modules():
        if "eval" in path.relative_to(ROOT).parts:
            found.append(f"{_rel(path)}: evaluation code inside an app (move it to bench/)")
        found.extend(_evaluation_uses(path))
    assert not found, (
        "product code must not import bench, tests or an evaluation set, nor read files "
        "under bench/ or eval/:\n" + "\n".join(found)
    )


# --- (d) the README -------------------------------------------------------------------


def test_readme_is_short_and_starts_with_its_title() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    problems = []
    if len(lines) > MAX_README_LINES:
        problems.append(f"README.md has {len(lines)} lines (limit {MAX_README_LINES})")
    if not lines or not lines[0].startswith("# "):
        problems.append(f"README.md starts with {lines[0] if lines else ''!r}, not a '# ' title")
    assert not problems, "\n".join(problems)


# --- (e) comments say why, now ----------------------------------------------------------

HISTORY = re.compile(r"\bsession[ -]\d|\bissue #\d", re.IGNORECASE)
SPEC_POINTER = re.compile(r"\bSPEC\b")


def test_app_code_does_not_narrate_history_or_point_at_spec() -> None:
    found: list[str] = []
    for path in _app_files(".py", ".js", ".html"):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if HISTORY.search(line) or SPEC_POINTER.search(line):
                found.append(f"{_rel(path)}:{number}: {line.strip()[:100]}")
    assert not found, (
        'app code says "session N", "issue #N" or points at "SPEC" (history goes in '
        "commit messages; product rules are in docs/product.md):\n" + "\n".join(found)
    )


# --- the docs point at what exists ----------------------------------------------------------


def test_docs_name_only_make_targets_that_exist() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([a-z][\w-]*):", makefile, re.M))
    missing: list[str] = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        named = set(re.findall(r"`make ([a-z][\w-]*)", doc.read_text(encoding="utf-8")))
        for name in sorted(named):
            if name not in targets:
                missing.append(f"{_rel(doc)}: make {name}")
    assert not missing, "docs name make targets the Makefile lacks:\n" + "\n".join(missing)


def _private_imports(path: Path) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom) or not node.module or node.level:
            continue
        if node.module.split(".")[0] not in APPS:
            continue
        for alias in node.names:
            if alias.name.startswith("_") and not alias.name.startswith("__"):
                found.append(f"{_rel(path)}:{node.lineno}: {node.module}.{alias.name}")
    return found


def test_no_private_name_is_imported_across_app_modules() -> None:
    """A name another module needs is public: a leading underscore means "this module's
    own", and importing it elsewhere hides a dependency from whoever edits it."""
    found = [hit for path in app_modules() for hit in _private_imports(path)]
    assert not found, "private names imported from another module (make them public):\n  " + (
        "\n  ".join(found)
    )
