"""A shop's article files into the knowledge base (``knowledge_ingest FILE...``): one
document per file name and language, titled by its first heading; importing the file
again updates that document instead of adding a second."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from knowledge import services
from knowledge.models import Document

pytestmark = pytest.mark.django_db

RETURNS = (
    Path(__file__).resolve().parents[1] / "browser" / "second_shop" / "articles" / "returns.md"
)


def test_an_article_file_is_one_document_updated_on_reimport() -> None:
    data = RETURNS.read_bytes()
    document = services.document_import(file_name="returns.md", data=data)
    assert document.title == "Returns and refunds"
    assert document.source_format == Document.Format.MARKDOWN
    assert document.origin == "returns.md" and document.version == 1
    again = services.document_import(file_name="returns.md", data=data)
    assert again.pk == document.pk and again.version == 1  # unchanged: not re-ingested
    edited = services.document_import(
        file_name="returns.md", data=data.replace(b"14 days", b"21 days")
    )
    assert edited.pk == document.pk and edited.version == 2
    assert b"21 days" in services.document_bytes(edited)
    # Another language is another document; a file with no heading is titled by its name.
    zh = services.document_import(file_name="returns.md", data="退货政策".encode(), language="zh")
    assert zh.pk != document.pk and zh.title == "returns"
    assert Document.objects.count() == 2


def test_bad_article_files_are_refused_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="language 'fr'"):
        services.document_import(file_name="a.md", data=b"# A", language="fr")
    with pytest.raises(ValueError, match=re.escape("a.md: not UTF-8")):
        services.document_import(file_name="a.md", data=b"\xff\xfe# A")
    with pytest.raises(CommandError, match="cannot read"):
        call_command("knowledge_ingest", str(tmp_path / "missing.md"))
    assert not Document.objects.exists()
