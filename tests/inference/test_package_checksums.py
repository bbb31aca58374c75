"""Issue #18 item 4: the spaCy pipeline and the embedding model ship as Python
packages; their files are checked like the GGUF files, before the package is imported."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from inference import catalog
from inference.base import ModelFileError


def test_installed_model_packages_match_their_digests() -> None:
    for module in catalog.PACKAGE_TREES:
        root = catalog.package_verify(module)
        assert catalog.package_tree_digest(root) == catalog.PACKAGE_TREES[module]


def test_a_changed_file_is_refused_before_the_package_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A weights package of our own, which leaves a mark when it is imported.
    package = tmp_path / "tierdesk_test_weights"
    package.mkdir()
    (package / "__init__.py").write_text(f"open({str(tmp_path / 'imported')!r}, 'w').close()\n")
    weights = package / "model.bin"
    weights.write_bytes(b"\x00" * 4096)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(
        catalog.PACKAGE_TREES, "tierdesk_test_weights", catalog.package_tree_digest(package)
    )
    weights.write_bytes(b"\x00" * 4095 + b"\x01")  # one byte changed
    with pytest.raises(ModelFileError, match="Refusing to import"):
        catalog.package_verify("tierdesk_test_weights")
    assert not (tmp_path / "imported").exists() and "tierdesk_test_weights" not in sys.modules
    # An added file is refused as well; the original tree passes.
    weights.write_bytes(b"\x00" * 4096)
    shutil.copy(weights, package / "extra.bin")
    with pytest.raises(ModelFileError):
        catalog.package_verify("tierdesk_test_weights")
    (package / "extra.bin").unlink()
    assert catalog.package_verify("tierdesk_test_weights") == package
    assert not (tmp_path / "imported").exists()
