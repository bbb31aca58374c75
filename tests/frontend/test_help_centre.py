"""The public help centre (frontend/help_centre.py, knowledge/help_pages.py): each ready
article is a page whose sections carry the anchors citations name; an article's own HTML
and unsafe links are never rendered as markup; drafts are not published."""

from __future__ import annotations

import hashlib

import pytest
from django.test import Client

from knowledge.article_links import article_url
from knowledge.models import Document
from knowledge.retrieval import Passage

pytestmark = pytest.mark.django_db

ARTICLE = """# Bike servicing

## Book a service

Book online at https://service.example.com/book or [by phone](tel:+4512345678).
A basic service costs **€49**. <script>alert(1)</script>
[Our tips](javascript:alert(2)) and [the service list](https://service.example.com/list).

## Spare parts

We stock chains and tyres.
"""


def _doc(
    title: str = "Bike servicing",
    text: str = ARTICLE,
    language: str = "en",
    status: str = Document.Status.READY,
) -> Document:
    return Document.objects.create(
        title=title,
        text=text,
        language=language,
        source_format=Document.Format.MARKDOWN,
        status=status,
        content_hash=hashlib.sha256(f"{title}-{status}".encode()).hexdigest(),
    )


def test_an_article_page_has_its_sections_at_their_anchors(client: Client) -> None:
    doc = _doc()
    page = client.get(f"/help/{doc.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert '<section id="book-a-service">' in html and '<section id="spare-parts">' in html
    assert "<h2>Book a service</h2>" in html
    assert "<strong>€49</strong>" in html
    assert 'lang="en"' in html


def test_an_articles_html_and_unsafe_links_are_shown_as_text(client: Client) -> None:
    html = client.get(f"/help/{_doc().pk}/").content.decode()
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)" in html
    assert 'href="javascript:' not in html and 'href="tel:' not in html
    safe = '<a href="https://service.example.com/list" target="_blank"'
    assert safe in html and 'rel="noopener noreferrer nofollow"' in html


def test_a_draft_or_failed_article_is_not_published(client: Client) -> None:
    for status in (Document.Status.PENDING, Document.Status.FAILED):
        doc = _doc(title=f"Draft {status}", status=status)
        assert client.get(f"/help/{doc.pk}/").status_code == 404
    assert client.get("/help/999999/").status_code == 404


def test_a_chinese_article_is_shown_in_chinese(client: Client) -> None:
    text = "# 自行车保养\n\n## 预约保养\n\n基础保养费用为49欧元。\n"
    doc = _doc(title="自行车保养", text=text, language="zh")
    html = client.get(f"/help/{doc.pk}/", headers={"accept-language": "en"}).content.decode()
    assert 'lang="zh-hans"' in html
    assert "帮助中心" in html and "全部文章" in html
    assert '<section id="预约保养">' in html


def test_the_index_lists_ready_articles_in_the_shoppers_language(client: Client) -> None:
    _doc()
    _doc(title="Draft", status=Document.Status.PENDING)
    _doc(title="自行车保养", text="# 自行车保养\n\n基础保养费用为49欧元。\n", language="zh")
    html = client.get("/help/").content.decode()
    assert "Bike servicing" in html and "Draft" not in html and "自行车保养" not in html
    zh = client.get("/help/", headers={"accept-language": "zh-hans"}).content.decode()
    assert "自行车保养" in zh and "Bike servicing" not in zh
    # Each index offers the other language's articles, which exist.
    assert 'href="?lang=zh"' in html and 'href="?lang=en"' in zh


def test_the_index_offers_no_other_language_without_its_articles(client: Client) -> None:
    _doc()
    _doc(title="草稿", text="# 草稿\n\n未发布。\n", language="zh", status=Document.Status.PENDING)
    assert "?lang=zh" not in client.get("/help/").content.decode()


def test_a_citation_links_to_the_help_page_at_its_section() -> None:
    assert article_url(7, "book-a-service") == "/help/7/#book-a-service"
    assert article_url(7, "s1#2") == "/help/7/#s1"
    assert article_url(7) == "/help/7/"
    passage = Passage(
        chunk_id=1,
        document_id=7,
        title="Bike servicing",
        anchor="book-a-service#2",
        heading="Bike servicing > Book a service",
        text="A basic service costs €49.",
        language="en",
        score=0.5,
        similarity=0.5,
        coverage=1.0,
        bm25=None,
        relevant=True,
    )
    assert passage.citation()["url"] == "/help/7/#book-a-service"
