"""A demo article a support admin deletes stays deleted: ``make run`` seeds the demo shop
on every start, and a seed that created the article again would have the bot answer
from a policy the shop had removed."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from knowledge import services
from knowledge.models import DeletedSeedDocument, Document
from knowledge.seed import ARTICLES, knowledge_seed
from releases.permissions import SUPPORT_ADMINS

pytestmark = pytest.mark.django_db

KEY = "en-gift-cards"


def test_a_deleted_demo_article_is_not_seeded_again_until_asked_for() -> None:
    first = knowledge_seed()
    assert first["created"] == Document.objects.count() >= len(ARTICLES)
    doc = Document.objects.get(seed_key=KEY)
    services.document_delete(document_id=doc.pk)
    tomb = DeletedSeedDocument.objects.get(seed_key=KEY)
    assert tomb.title == doc.title

    again = knowledge_seed()
    assert again["created"] == 0 and again["kept_deleted"] == 1
    assert not Document.objects.filter(seed_key=KEY).exists()

    # Naming the key asks for it: it comes back and is no longer marked deleted.
    restored = knowledge_seed(keys=[KEY])
    assert restored["created"] == 1
    assert Document.objects.filter(seed_key=KEY).exists()
    assert not DeletedSeedDocument.objects.exists()


def test_an_admins_own_article_leaves_no_mark_when_deleted() -> None:
    doc = services.document_create(title="Store credit", language="en", text="# Store credit\n")
    services.document_delete(document_id=doc.pk)
    assert not DeletedSeedDocument.objects.exists()


def test_a_support_admin_deletes_and_restores_a_demo_article_in_admin(client: Client) -> None:
    knowledge_seed(keys=[KEY])
    doc = Document.objects.get(seed_key=KEY)
    user = User.objects.create_user("mia", "mia@example.com", "pw", is_staff=True)
    user.groups.add(Group.objects.get(name=SUPPORT_ADMINS))
    client.force_login(user)

    response = client.post(f"/admin/knowledge/document/{doc.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not Document.objects.filter(pk=doc.pk).exists()
    listing = client.get("/admin/knowledge/deletedseeddocument/")
    assert listing.status_code == 200 and "Gift cards" in listing.content.decode()
    # A restart's seed leaves it out.
    assert knowledge_seed()["kept_deleted"] == 1
    assert not Document.objects.filter(seed_key=KEY).exists()

    tomb = DeletedSeedDocument.objects.get(seed_key=KEY)
    response = client.post(
        "/admin/knowledge/deletedseeddocument/",
        {"action": "restore", "_selected_action": [str(tomb.pk)]},
        follow=True,
    )
    assert "1 demo article(s) restored" in response.content.decode()
    assert Document.objects.filter(seed_key=KEY).exists()
    assert not DeletedSeedDocument.objects.exists()


def test_seed_demo_seeds_only_the_named_articles_and_refuses_an_unknown_key() -> None:
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match="Unknown knowledge article key"):
        call_command("seed_demo", "--knowledge", "en-boots-faq", "no-such-article")
    assert not Document.objects.exists()

    call_command("seed_demo", "--knowledge", "en-boots-faq", "store-policy")
    assert set(Document.objects.values_list("seed_key", flat=True)) == {
        "en-boots-faq",
        "store-policy",
    }
