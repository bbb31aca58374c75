"""Support admins edit the shop's words in Django admin (knowledge.admin_synonyms):
clear errors for a set that can't work, a question that starts to match once a set
is added, and the "try a question" box with the expanded terms."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from knowledge import shop_words
from knowledge.models import DeletedSeedDocument, SynonymSet

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client_(db: None) -> Client:
    from knowledge.seed import synonyms_seed

    SynonymSet.objects.all().delete()
    synonyms_seed()
    shop_words.reset()
    user = get_user_model().objects.create_superuser("wordsadmin", "w@example.com", "pw")
    client = Client()
    client.force_login(user)
    return client


def _post(client: Client, **fields: str) -> Any:
    data = {"language": "en", "kind": "equivalent", "terms": "", "target": "", "note": ""}
    data.update(fields)
    data["enabled"] = "on"
    return client.post(reverse("admin:knowledge_synonymset_add"), data)


def test_changelist_lists_the_demo_sets(admin_client_: Client) -> None:
    response = admin_client_.get(reverse("admin:knowledge_synonymset_changelist"))
    body = response.content.decode()
    assert response.status_code == 200
    assert "postage, shipping, delivery" in body and "Try a question" in body


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"terms": " , "}, "Add at least one term."),
        ({"terms": "ship"}, "An equivalent set needs at least two different terms."),
        ({"kind": "broader", "terms": "Lyon"}, "A broader set needs a target"),
        ({"kind": "broader", "terms": "Lyon", "target": "lyon"}, "broader than itself"),
        ({"terms": "ship, send", "target": "x"}, "Only a broader set has a target"),
        # "shipping" is in the demo's postage set (by stem: "shipped" is the same word).
        ({"terms": "shipped, sent"}, "is already in the equivalent set “postage, shipping"),
    ],
)
def test_a_set_that_cannot_work_gets_a_clear_error(
    admin_client_: Client, fields: dict[str, str], error: str
) -> None:
    before = SynonymSet.objects.count()
    response = _post(admin_client_, **fields)
    assert response.status_code == 200
    assert error in response.content.decode()
    assert SynonymSet.objects.count() == before


def test_editing_a_demo_set_that_shares_a_term_is_allowed(admin_client_: Client) -> None:
    # "coupon" is in two demo sets (not transitive: voucher is not promo); editing one
    # of them without adding a shared term is not an error.
    row = SynonymSet.objects.get(seed_key="en:equivalent:coupon")
    response = admin_client_.post(
        reverse("admin:knowledge_synonymset_change", args=[row.pk]),
        {
            "language": "en",
            "kind": "equivalent",
            "terms": "coupon, voucher, token",
            "note": "",
            "target": "",
            "enabled": "on",
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    assert "token" in SynonymSet.objects.get(pk=row.pk).terms


def test_an_added_set_makes_a_question_match_and_the_page_shows_it(
    kb: Any, admin_client_: Client
) -> None:
    question = "can I wash my dungarees?"
    try_url = reverse("admin:knowledge_synonymset_try")
    before = admin_client_.get(try_url, {"question": question}).content.decode()
    assert "No synonym set has any of these words." in before

    # "jeans" is in two demo sets already: the admin adds the new word to one of them.
    refused = _post(admin_client_, terms="dungarees, jeans")
    assert "is already in the equivalent set" in refused.content.decode()
    row = SynonymSet.objects.get(seed_key="en:equivalent:denim")
    response = admin_client_.post(
        reverse("admin:knowledge_synonymset_change", args=[row.pk]),
        {
            **{"language": "en", "kind": "equivalent", "target": "", "note": "", "enabled": "on"},
            "terms": "denim, jeans, dungarees",
            "_changes": "1",
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    assert response["Location"] == reverse("admin:knowledge_synonymset_changes", args=[row.pk])

    page = admin_client_.get(response["Location"], {"questions": question}).content.decode()
    summary = page.split('id="changes-summary"')[1][:200]
    assert summary.startswith(">1 of ") and question in page and "Jeans FAQ" in page
    assert "nothing relevant" in page  # without the set

    after = admin_client_.get(try_url, {"question": question}).content.decode()
    assert "dungare, denim, jean" in after.split('id="try-expanded"')[1][:200]
    assert "Jeans FAQ" in after.split('id="try-match"')[1]


def test_deleting_a_demo_set_keeps_it_deleted_until_restored(admin_client_: Client) -> None:
    from knowledge.seed import synonyms_seed

    row = SynonymSet.objects.get(seed_key="en:equivalent:postage")
    response = admin_client_.post(
        reverse("admin:knowledge_synonymset_delete", args=[row.pk]), {"post": "yes"}
    )
    assert response.status_code == 302
    assert "ship" not in shop_words.current().alternatives("postag")
    assert synonyms_seed() == 0
    mark = DeletedSeedDocument.objects.get(seed_key="synonyms:en:equivalent:postage")
    admin_client_.post(
        reverse("admin:knowledge_deletedseeddocument_changelist"),
        {"action": "restore", "_selected_action": [mark.pk]},
    )
    assert SynonymSet.objects.filter(seed_key="en:equivalent:postage").exists()
    assert "ship" in shop_words.current().alternatives("postag")


def test_the_errors_and_pages_speak_chinese_to_a_chinese_admin(admin_client_: Client) -> None:
    admin_client_.cookies["django_language"] = "zh-hans"
    response = _post(admin_client_, kind="broader", terms="里昂")
    assert "上位词组需要一个上位词" in response.content.decode()
    page = admin_client_.get(reverse("admin:knowledge_synonymset_try"), {"question": "运费多少"})
    body = page.content.decode()
    assert "实际搜索的词" in body and "邮费" in body
