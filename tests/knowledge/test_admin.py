"""Support admins in Django admin: list with status, add pasted text, upload, re-ingest,
chunk preview, and the "try a question" page with scores."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from knowledge.models import Document

from .conftest import doc_id

pytestmark = pytest.mark.django_db
# The read-only chunk inline still posts its (empty) formset management form.
INLINE = {
    "chunks-TOTAL_FORMS": "0",
    "chunks-INITIAL_FORMS": "0",
    "chunks-MIN_NUM_FORMS": "0",
    "chunks-MAX_NUM_FORMS": "1000",
}


@pytest.fixture
def admin_client_(db: None) -> Client:
    user = get_user_model().objects.create_superuser("kbadmin", "kb@example.com", "pw")
    client = Client()
    client.force_login(user)
    return client


def test_changelist_shows_status_and_progress(kb: Any, admin_client_: Client) -> None:
    response = admin_client_.get(reverse("admin:knowledge_document_changelist"))
    assert response.status_code == 200
    body = response.content.decode()
    assert "Boots FAQ" in body and "ready" in body and "Try a question" in body


def test_add_pasted_text_queues_ingestion(
    admin_client_: Client, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks() as callbacks:
        response = admin_client_.post(
            reverse("admin:knowledge_document_add"),
            {
                "title": "Socks FAQ",
                "language": "en",
                "text": "# Socks\n\n## Sizes\n\nSocks come in S, M and L.",
                "source_format": "markdown",
                "origin": "",
                **INLINE,
            },
        )
    assert response.status_code == 302, response.content.decode()[:2000]
    doc = Document.objects.get(title="Socks FAQ")
    assert doc.status == "pending" and doc.content_hash and len(callbacks) == 1


def test_upload_must_be_a_supported_file(
    admin_client_: Client, settings: Any, tmp_path: Any
) -> None:
    settings.MEDIA_ROOT = str(tmp_path)
    response = admin_client_.post(
        reverse("admin:knowledge_document_add"),
        {
            "title": "Bad",
            "language": "en",
            "file": SimpleUploadedFile("x.exe", b"MZ..."),
            "text": "",
            "source_format": "text",
            "origin": "",
            **INLINE,
        },
    )
    assert (
        response.status_code == 200 and "Upload a PDF, HTML, Markdown" in response.content.decode()
    )
    assert not Document.objects.filter(title="Bad").exists()


def test_change_page_previews_chunks_and_summary(kb: Any, admin_client_: Client) -> None:
    pk = doc_id("en-boots-faq")
    response = admin_client_.get(reverse("admin:knowledge_document_change", args=[pk]))
    body = response.content.decode()
    assert response.status_code == 200
    assert "are-the-boots-waterproof" in body and "waterproof version" in body
    assert Document.objects.get(pk=pk).summary[:30] in body


def test_reingest_action(
    kb: Any, admin_client_: Client, django_capture_on_commit_callbacks: Any
) -> None:
    pk = doc_id("en-boots-faq")
    with django_capture_on_commit_callbacks() as callbacks:
        response = admin_client_.post(
            reverse("admin:knowledge_document_changelist"),
            {"action": "reingest", "_selected_action": [pk]},
        )
    assert response.status_code == 302
    assert Document.objects.get(pk=pk).status == "pending" and len(callbacks) == 1


def test_try_a_question_shows_passages_with_scores(kb: Any, admin_client_: Client) -> None:
    url = reverse("admin:knowledge_document_try")
    response = admin_client_.get(url, {"question": "are the boots waterproof?", "method": "hybrid"})
    body = response.content.decode()
    assert response.status_code == 200
    assert "Keywords: <strong>boots, waterproof</strong>" in body
    assert (
        "are-the-boots-waterproof" in body and "similarity" in body and "keyword coverage" in body
    )
    response = admin_client_.get(url, {"question": "who won the world cup?"})
    assert (
        "says it doesn&#x27;t know" in response.content.decode()
        or "says it doesn't know" in response.content.decode()
    )
