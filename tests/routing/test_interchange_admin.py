"""The admin's import (upload, preview, apply), export and retraining pages."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from routing import services
from routing.models import Intent, RetrainRun, Utterance
from routing.services import router_model_train
from routing.versioning import router_version_get

pytestmark = pytest.mark.django_db

CSV = b"intent,tier,text\ngift_card,L2,do gift cards expire\nstore_hours,L1,when do you open\n"


def test_upload_preview_then_apply(admin_client: Client) -> None:
    url = reverse("admin:routing_intent_import")
    upload = SimpleUploadedFile("shop.csv", CSV, content_type="text/csv")

    preview = admin_client.post(url, {"file": upload, "language": "en", "preview": "1"})

    assert preview.status_code == 200
    body = preview.content.decode()
    assert 'id="import-preview"' in body
    assert "<td>gift_card</td><td>create</td><td>L2</td><td>1</td>" in body
    assert not Intent.objects.exists()  # a preview writes nothing
    # The previewed file comes back in the form, so "apply" needs no second upload.
    content = preview.context["form"].initial["content"]

    applied = admin_client.post(
        url, {"content": content, "filename": "shop.csv", "language": "en", "apply": "1"}
    )

    assert applied.status_code == 302
    assert applied["Location"] == reverse("admin:routing_intent_retraining")
    assert set(Intent.objects.values_list("name", flat=True)) == {"gift_card", "store_hours"}
    assert Utterance.objects.get(intent__name="gift_card").language == "en"


def test_a_malformed_upload_lists_its_errors_and_changes_nothing(admin_client: Client) -> None:
    bad = b"intent,tier,text\ngift_card,L2,fine\nbad name,L2,x\nstore,L7,y\n"
    response = admin_client.post(
        reverse("admin:routing_intent_import"),
        {"file": SimpleUploadedFile("bad.csv", bad), "language": "auto", "apply": "1"},
    )

    body = response.content.decode()
    assert response.status_code == 200
    assert "2 errors" in body
    assert "line 3: intent name" in body
    assert "line 4: tier" in body
    assert 'name="apply"' not in body  # nothing to apply until the file is fixed
    assert not Intent.objects.exists()


def test_export_downloads_each_format(admin_client: Client) -> None:
    Intent.objects.create(name="gift_card", tier="L2").utterances.create(
        language="en", text="do gift cards expire"
    )
    for fmt, needle in (
        ("csv", "utterance,gift_card"),
        ("json", '"gift_card"'),
        ("rasa", "- do gift"),
    ):
        response = admin_client.get(reverse("admin:routing_intent_export"), {"format": fmt})
        assert response.status_code == 200
        assert "attachment" in response["Content-Disposition"]
        assert needle in response.content.decode()


def test_retraining_page_shows_progress_then_the_trained_model(
    admin_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    admin_client.post(
        reverse("admin:routing_intent_import"),
        {"file": SimpleUploadedFile("shop.csv", CSV), "language": "en", "apply": "1"},
    )
    version = router_version_get().version
    # What the enqueue records when the change commits (with the worker not yet there).
    RetrainRun.objects.get_or_create(router_version=version)
    page = admin_client.get(reverse("admin:routing_intent_retraining"))
    body = page.content.decode()
    assert "Retraining…" in body
    assert 'http-equiv="refresh"' in body

    stages: list[str] = []
    original = services.retrain_run_record

    def recording(v: int, **fields: Any) -> None:
        if "stage" in fields:
            stages.append(fields["stage"])
        original(v, **fields)

    monkeypatch.setattr(services, "retrain_run_record", recording)
    result = router_model_train(version=version)

    assert result["outcome"] == "trained"
    assert stages[:2] == ["reading the examples", "fitting 2 intents on 2 examples"]
    run = RetrainRun.objects.get(router_version=version)
    assert (run.status, run.progress) == (RetrainRun.DONE, 1.0)
    assert run.result["samples"] == 2
    body = admin_client.get(reverse("admin:routing_intent_retraining")).content.decode()
    assert "The classifier is trained on these examples" in body
    assert 'http-equiv="refresh"' not in body

    # A task for an older version does nothing and says so.
    assert router_model_train(version=version - 1)["outcome"] == "superseded"
    assert RetrainRun.objects.get(router_version=version - 1).status == RetrainRun.SUPERSEDED
