"""Articles that disagree: typed values with their subject, conflicts found at
ingestion between sections of different documents, and how an admin settles them."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import reverse

from knowledge import cards, services
from knowledge.answer import answer_plan
from knowledge.conflicts import conflict_resolve, conflicts_check, open_conflict_for
from knowledge.models import AnswerCard, Document, KnowledgeConflict
from knowledge.tasks import conflicts_check_task
from knowledge.values import section_values, subjects_match
from releases.permissions import SUPPORT_ADMINS

from .conftest import doc_id

GIFT_WRAP = "# Gift wrapping\n\n## Gift wrapping\n\nWe offer gift wrapping for $5.99 per item.\n"


def kinds(text: str) -> list[tuple[str, float, str]]:
    return [(v.kind, round(v.amount, 2), v.unit) for v in section_values(text)]


def test_values_are_typed_and_keep_their_figures_whole() -> None:
    assert kinds("Gift wrapping costs $4.99 per item.") == [("money", 4.99, "USD")]
    assert kinds("A refund takes 2 weeks.") == [("duration", 14.0, "day")]
    assert kinds("Members save 15% on shoes.") == [("percent", 15.0, "%")]
    assert kinds("礼品包装每件收费八美元。") == [("money", 8.0, "USD")]
    assert kinds("退货需要三十天。") == [("duration", 30.0, "day")]
    yes, no = section_values("We ship to Canada."), section_values("We do not ship to Canada.")
    assert (yes[0].kind, yes[0].amount, no[0].amount) == ("polarity", 1.0, 0.0)
    assert subjects_match(yes[0].subject, no[0].subject)


def test_a_qualifier_only_one_side_names_keeps_two_values_apart() -> None:
    (standard,) = section_values("Standard shipping costs $5.99.")
    (express,) = section_values("Express shipping costs $14.99.")
    assert not subjects_match(standard.subject, express.subject)
    wrap_a = section_values("You can have any item gift wrapped at checkout for $4.99 per item.")
    wrap_b = section_values("Gift wrapping costs $5.99 per item.")
    assert subjects_match(wrap_a[0].subject, wrap_b[0].subject)


@pytest.mark.django_db
def test_the_demo_articles_disagree_with_nothing(kb: dict[str, int]) -> None:
    for document in Document.objects.all():
        assert conflicts_check(document_id=document.pk)["opened"] == 0
    assert not KnowledgeConflict.objects.exists()


def add_article(text: str, title: str = "Gift wrapping") -> Document:
    doc = services.document_create(title=title, text=text, language="en", source_format="markdown")
    assert services.document_ingest(document_id=doc.pk).result == "ready"
    return doc


@pytest.mark.django_db
def test_a_new_article_with_another_price_opens_a_conflict_until_it_agrees(
    kb: dict[str, int],
) -> None:
    doc = add_article(GIFT_WRAP)
    assert conflicts_check_task(doc.pk) == {"opened": 1, "closed": 0, "kept": 0}
    conflict = KnowledgeConflict.objects.get()
    sides = {
        (conflict.document_a_id, conflict.value_a),
        (conflict.document_b_id, conflict.value_b),
    }
    assert sides == {(doc_id("en-pricing-faq"), "$4.99"), (doc.pk, "$5.99")}
    assert (conflict.kind, conflict.status, conflict.subject) == ("money", "open", ["gift", "wrap"])
    # Checking again finds the same conflict, not a second one.
    assert conflicts_check(document_id=doc.pk)["kept"] == 1

    # Only a question about its subject is affected.
    asked = open_conflict_for(
        document_id=doc.pk, anchor="gift-wrapping", question="what does gift wrap cost per item?"
    )
    assert asked == conflict
    assert (
        open_conflict_for(document_id=doc.pk, anchor="gift-wrapping", question="what is a card?")
        is None
    )

    doc.text = GIFT_WRAP.replace("$5.99", "$4.99")
    services.document_save(document=doc)
    assert services.document_ingest(document_id=doc.pk).result == "ready"
    assert conflicts_check(document_id=doc.pk)["closed"] == 1
    conflict.refresh_from_db()
    assert (conflict.status, conflict.resolution) == ("resolved", "edited")


@pytest.mark.django_db
def test_keeping_one_side_rejects_the_other_sides_card(kb: dict[str, int]) -> None:
    doc = add_article(GIFT_WRAP)
    cards.cards_sync(document_id=doc.pk)
    cards.cards_sync(document_id=doc_id("en-pricing-faq"))
    conflicts_check(document_id=doc.pk)
    conflict = KnowledgeConflict.objects.get()
    new_side_kept = "kept_a" if conflict.document_a_id == doc.pk else "kept_b"
    conflict_resolve(conflict_id=conflict.pk, resolution=new_side_kept, user_id=None)
    conflict.refresh_from_db()
    assert (conflict.status, conflict.resolution) == ("resolved", new_side_kept)
    old = AnswerCard.objects.filter(document_id=doc_id("en-pricing-faq"), anchor="gift-wrapping")
    assert old.exists()
    assert all(card.status == AnswerCard.Status.REJECTED for card in old)
    assert AnswerCard.objects.get(document=doc).status != AnswerCard.Status.REJECTED
    # A resolved conflict stays resolved when the check runs again.
    assert conflicts_check(document_id=doc.pk) == {"opened": 0, "closed": 0, "kept": 1}
    with pytest.raises(ValueError):
        conflict_resolve(conflict_id=conflict.pk, resolution="flip a coin", user_id=None)


@pytest.mark.django_db
def test_support_admin_sees_the_count_and_the_two_sides_and_resolves(
    kb: dict[str, int], client: Client
) -> None:
    user = User.objects.create_user("support", password="pw", is_staff=True)
    user.groups.add(Group.objects.get(name=SUPPORT_ADMINS))
    client.force_login(user)
    doc = add_article(GIFT_WRAP)
    listing = client.get(reverse("admin:knowledge_document_changelist")).content.decode()
    assert "conflicts-open" not in listing

    conflicts_check(document_id=doc.pk)
    conflict = KnowledgeConflict.objects.get()
    listing = client.get(reverse("admin:knowledge_document_changelist")).content.decode()
    assert "1 conflict between articles is open" in listing

    url = reverse("admin:knowledge_knowledgeconflict_change", args=[conflict.pk])
    page = client.get(url).content.decode()
    assert page.count('class="conflict-side"') == 2
    assert '<mark class="conflict-value">$4.99</mark>' in page
    assert '<mark class="conflict-value">$5.99</mark>' in page
    assert "Pricing FAQ" in page and "Gift wrapping" in page

    assert client.post(url, {"resolution": "coin"}).status_code == 200
    conflict.refresh_from_db()
    assert conflict.status == "open"
    response = client.post(url, {"resolution": "both_right"})
    assert response.status_code == 302
    conflict.refresh_from_db()
    assert (conflict.status, conflict.resolution, conflict.resolved_by) == (
        "resolved",
        "both_right",
        user,
    )
    listing = client.get(reverse("admin:knowledge_document_changelist")).content.decode()
    assert "conflicts-open" not in listing


@pytest.mark.django_db
def test_l2_cites_both_articles_on_the_disputed_subject_only(kb: dict[str, int]) -> None:
    doc = add_article(GIFT_WRAP)
    # The demo article's approved card would otherwise answer $4.99 on its own.
    cards.cards_sync(document_id=doc_id("en-pricing-faq"))
    old_card = AnswerCard.objects.get(document_id=doc_id("en-pricing-faq"), anchor="gift-wrapping")
    cards.card_review(card_ids=[old_card.pk], status=AnswerCard.Status.APPROVED, user_id=None)
    conflicts_check(document_id=doc.pk)
    conflict = KnowledgeConflict.objects.get()

    for question in ("how much is gift wrapping?", "what does gift wrap cost per item?"):
        plan = answer_plan(question=question, language="en")
        assert plan.retrieval.get("conflict") == conflict.pk, question
        assert "$4.99" in plan.text and "$5.99" in plan.text
        assert "“Pricing FAQ”" in plan.text and "“Gift wrapping”" in plan.text
        assert plan.actions == ["offer:human"] and plan.generation is None
        assert {c["document_id"] for c in plan.citations} == {doc.pk, doc_id("en-pricing-faq")}

    # A case one article states apart, and another subject, are answered as before.
    for question in ("is gift wrapping free for Gold members?", "how much is express shipping?"):
        assert "conflict" not in answer_plan(question=question, language="en").retrieval

    # Kept the new article: a question the old one would answer gets the kept words.
    new_side = "kept_a" if conflict.document_a_id == doc.pk else "kept_b"
    conflict_resolve(conflict_id=conflict.pk, resolution=new_side, user_id=None)
    kept = "Our “Gift wrapping” article says: We offer gift wrapping for $5.99 per item."
    settled = 0
    for question in ("how much is gift wrapping?", "what does gift wrap cost per item?"):
        plan = answer_plan(question=question, language="en")
        assert "$4.99" not in plan.text, (question, plan.text)
        if plan.retrieval.get("conflict") == conflict.pk:
            assert plan.text == kept
            assert [c["document_id"] for c in plan.citations] == [doc.pk]
            assert plan.actions == []
            settled += 1
    # The old article's section is still retrieved; its figure is not what is said.
    assert settled >= 1

    conflict.refresh_from_db()
    conflict.resolution = "both_right"
    conflict.save()
    after = answer_plan(question="how much is gift wrapping?", language="en")
    assert "conflict" not in after.retrieval
