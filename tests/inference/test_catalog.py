from __future__ import annotations

from pathlib import Path

import pytest

from inference.base import ModelFileError
from inference.catalog import CATALOG, catalog_name, model_verify, resolve_model_file, sha256_of


def test_missing_file_says_how_to_fix(tmp_path: Path) -> None:
    with pytest.raises(ModelFileError, match="make setup"):
        model_verify(path=tmp_path / "nope.gguf", sha256="00")


def test_checksum_mismatch_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"not really a model")
    with pytest.raises(ModelFileError, match="Refusing to load"):
        model_verify(path=bad, sha256=CATALOG["gemma3-270m-q4km"].sha256)


def test_own_file_without_checksum_is_refused(tmp_path: Path) -> None:
    own = tmp_path / "shop.gguf"
    own.write_bytes(b"x")
    with pytest.raises(ModelFileError, match="SHA256"):
        resolve_model_file(model="", path=str(own), sha256="", model_dir=tmp_path)
    # With the right checksum the shop's own file is accepted.
    path, sha = resolve_model_file(
        model="", path=str(own), sha256=sha256_of(own), model_dir=tmp_path
    )
    assert path == own and sha == sha256_of(own)


def test_unknown_catalogue_name(tmp_path: Path) -> None:
    with pytest.raises(ModelFileError, match="unknown model"):
        resolve_model_file(model="gpt-17", path="", sha256="", model_dir=tmp_path)


def test_assembled_files_match_the_pinned_checksums(model_files: None) -> None:
    from django.conf import settings

    for name in ("gemma3-270m-q4km", "qwen2.5-coder-0.5b-instruct-q4km"):
        entry = CATALOG[name]
        assert sha256_of(settings.TIERDESK_MODEL_DIR / entry.filename) == entry.sha256


def test_old_catalogue_names_load_the_same_file(model_files: None) -> None:
    """A TIERDESK_FALLBACK_MODEL (or _LARGE_) value written before the entries said
    "coder" still gets the same checked file, and the backend reports the new name."""
    from django.conf import settings

    from inference.backends.llamacpp import LlamaCppBackend

    new = "qwen2.5-coder-0.5b-instruct-q4km"
    path, sha = resolve_model_file(
        model="qwen2.5-0.5b-instruct-q4km",
        path="",
        sha256="",
        model_dir=settings.TIERDESK_MODEL_DIR,
    )
    assert path.name == CATALOG[new].filename and sha == CATALOG[new].sha256
    backend = LlamaCppBackend("fallback", {"model": "qwen2.5-0.5b-instruct-q4km"})
    assert backend.model_id == new and backend.chat
    assert catalog_name("qwen2.5-1.5b-instruct-q4km") == "qwen2.5-coder-1.5b-instruct-q4km"
    assert catalog_name("gpt-4o-mini") == "gpt-4o-mini"
