"""Generated questions (doc2query): written per section at ingestion in the shop's own
words, embedded by the real multilingual embedder, matched beside the section text and
the cards, edited by support admins on the card page; edits survive regeneration."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from knowledge import cards, services
from knowledge.models import AnswerCard, Chunk, Document, SectionQuestion, SynonymSet
from knowledge.retrieval import passages_retrieve
from knowledge.section_questions import (
    GeneratedQuestion,
    questions_for,
    questions_reset,
    section_questions_active,
    section_questions_edit,
    section_questions_sync,
)
from releases.permissions import SUPPORT_ADMINS

pytestmark = pytest.mark.django_db

ARTICLE = """# Shipping

## Where do you ship?

We ship to France and Belgium only. Parcels leave our warehouse within two days.

## Gift wrapping

We gift wrap any item for $5.99 per item, with a card carrying your message.
"""
WHERE = "where-do-you-ship"
WRAP = "gift-wrapping"


@pytest.fixture(autouse=True)
def _fresh(settings: Any) -> None:
    settings.TIERDESK_KB_QUESTIONS_ROLE = ""
    questions_reset()


def places() -> None:
    """The shop's words: Lyon and Marseille are in France (a broader set, as an admin
    adds it)."""
    services.synonym_set_save(
        synonym_set=SynonymSet(
            language="en", kind="broader", terms="Lyon, Marseille", target="France"
        )
    )


def ingest(text: str = ARTICLE, doc: Document | None = None) -> Document:
    if doc is None:
        doc = services.document_create(
            title="Shipping", text=text, language="en", source_format="markdown"
        )
    else:
        doc.text = text
        services.document_save(document=doc)
    assert services.document_ingest(document_id=doc.pk).result == "ready"
    section_questions_sync(document_id=doc.pk)
    return doc


def texts(doc: Document, anchor: str) -> list[str]:
    return [q.text for q in section_questions_active(document_id=doc.pk, anchor=anchor)]


def test_each_section_gets_questions_in_the_shops_words_embedded_at_ingestion() -> None:
    places()
    doc = ingest()
    where = SectionQuestion.objects.filter(document=doc, anchor=WHERE)
    assert "Where do you ship?" in texts(doc, WHERE)
    # An instance of the rule, in the shop's words: Lyon is covered by "France", and
    # asked the way the section's rule is asked.
    instance = where.get(text="Do you ship to Lyon?")
    assert instance.role == SectionQuestion.Role.INSTANCE
    assert instance.source == SectionQuestion.Source.GENERATED
    assert instance.embedding is not None
    vector = np.frombuffer(bytes(instance.embedding), dtype="<f4")
    assert vector.shape == (384,) and abs(float(np.linalg.norm(vector)) - 1) < 1e-3
    # A price the section states gets the question that asks for it.
    assert "How much does gift wrapping cost?" in texts(doc, WRAP)
    # Nothing about Lyon where the section names no place.
    assert not [t for t in texts(doc, WRAP) if "Lyon" in t]
    # Unchanged sections keep their questions.
    again = section_questions_sync(document_id=doc.pk)
    assert again["kept"] == 2 and again["written"] == 0


def test_admin_edits_survive_regeneration_after_the_article_changes() -> None:
    places()
    doc = ingest()
    before = texts(doc, WHERE)
    dropped = "Do you ship to Marseille?"
    assert dropped in before
    version = services.kb_version_bump()
    lines = [t for t in before if t != dropped] + ["Can I get a parcel sent to Lyon?"]
    assert section_questions_edit(document_id=doc.pk, anchor=WHERE, lines=lines) == 2
    assert services.kb_version_bump() > version + 1  # the edit moved the version too
    own = SectionQuestion.objects.get(document=doc, text="Can I get a parcel sent to Lyon?")
    assert own.source == SectionQuestion.Source.EDITED and own.embedding
    assert SectionQuestion.objects.get(document=doc, text=dropped).suppressed

    # The section changes: its generated questions are written again, the admin's
    # question stays and the deleted one does not come back.
    ingest(ARTICLE.replace("France and Belgium", "France, Belgium and Luxembourg"), doc)
    after = texts(doc, WHERE)
    assert "Can I get a parcel sent to Lyon?" in after
    assert dropped not in after
    assert "Do you ship to Lyon?" in after
    # A section that is gone takes its questions with it.
    ingest(ARTICLE.split("## Gift wrapping")[0], doc)
    assert not SectionQuestion.objects.filter(document=doc, anchor=WRAP).exists()


def test_a_question_in_the_shops_words_finds_the_section_through_its_questions() -> None:
    places()
    doc = ingest()
    result = passages_retrieve(question="Do you deliver to Lyon?", language="en")
    top = result.passages[0]
    assert (top.document_id, top.anchor) == (doc.pk, WHERE)
    assert top.relevant and top.questions_similarity is not None
    assert top.questions_similarity >= 0.9
    assert "questions" in result.timings_ms


def test_questions_for_gives_each_chunk_its_sections_questions() -> None:
    places()
    doc = ingest()
    chunks = dict(Chunk.objects.filter(document=doc).values_list("anchor", "pk"))
    out = questions_for([chunks[WHERE], chunks[WRAP], 10**9])
    assert set(out) == {chunks[WHERE], chunks[WRAP]}
    first = out[chunks[WHERE]][0]
    assert isinstance(first, GeneratedQuestion)
    assert first.vector is not None and first.vector.shape == (384,)
    assert {q.role for q in out[chunks[WHERE]]} == {"wording", "instance"}


def test_support_admin_edits_the_generated_questions_on_the_card_page_and_a_question_matches(
    client: Client,
) -> None:
    doc = ingest()
    cards.cards_sync(document_id=doc.pk)
    card = AnswerCard.objects.get(document=doc, anchor=WRAP)
    cards.card_review(card_ids=[card.pk], status=AnswerCard.Status.APPROVED, user_id=None)
    asked = "How much to make my present look pretty with paper and a bow?"
    assert cards.card_match(question=asked, language="en") is None

    admin = User.objects.create_user("mia", "mia@example.com", "pw", is_staff=True)
    admin.groups.add(Group.objects.get(name=SUPPORT_ADMINS))
    client.force_login(admin)
    page = client.get(f"/admin/knowledge/answercard/{card.pk}/change/").content.decode()
    assert "Questions that find this section" in page
    assert "How much does gift wrapping cost?" in page and "another wording" in page
    own = "How much is it to have my present wrapped in nice paper with a bow?"
    lines = [*texts(doc, WRAP), own]
    response = client.post(
        f"/admin/knowledge/answercard/{card.pk}/change/",
        {
            "questions_text": "\n".join(card.questions),
            "answer": card.answer,
            "generated_questions_text": "\n".join(lines),
        },
        follow=True,
    )
    assert response.status_code == 200
    card.refresh_from_db()
    assert card.status == AnswerCard.Status.APPROVED
    match = cards.card_match(question=asked, language="en")
    assert match is not None and match.row.card_id == card.pk
    assert match.how == "generated-question"


def test_the_demo_seeds_articles_go_to_the_bulk_queue_a_shop_admins_to_the_default() -> None:
    admin_doc = services.document_create(title="Ours", text="We open at nine.")
    seed_doc = services.document_create(title="Demo", text="Demo text.", seed_key="demo-x")
    assert services.queue_for(admin_doc.pk) is None
    assert services.queue_for(seed_doc.pk) == "bulk"
    # A demo article an admin edits is the admin's work now.
    seed_doc.text = "Demo text, edited."
    services.document_save(document=seed_doc)
    assert services.queue_for(seed_doc.pk) is None
