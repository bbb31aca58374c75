"""The new-shop answers evaluation's own logic (bench/answers_shop.py): its sets are
whole, a pointed reply is counted apart from an answer, and one shop's run keeps the
other shops' figures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench import answers_shop
from bench.answers import load_jsonl

SHOPS = [p.name for p in answers_shop.SETS.iterdir() if p.name != "demo" and p.is_dir()]


@pytest.mark.parametrize("shop", SHOPS)
def test_every_question_names_an_article_of_its_shop(shop: str) -> None:
    articles = json.loads((answers_shop.SETS / shop / "articles.json").read_text("utf-8"))
    keys = {a["key"] for a in articles}
    questions = load_jsonl(answers_shop.SETS / shop / "questions.jsonl")
    assert len(questions) >= 150
    assert sum(q["kind"] == "unanswerable" for q in questions) >= 25
    answerable = [q for q in questions if q["kind"] != "unanswerable"]
    assert all(q["doc"] in keys and q["expect"] for q in answerable), shop


def _row(grade: str, kind: str = "fact", cited: list[int] | None = None, **extra: Any) -> dict:
    return {
        "id": "q",
        "grade": grade,
        "kind": kind,
        "lang": "en",
        "tier": "L2",
        "first_ms": 100.0,
        "cited_documents": cited or [],
        **extra,
    }


def test_pointed_needs_the_marker_and_the_right_article() -> None:
    doc_keys = {1: "shipping", 2: "returns"}
    question = {"kind": "fact", "doc": "shipping"}
    assert answers_shop.pointed(question, _row("pointed", cited=[1]), doc_keys)
    assert answers_shop.pointed(question, _row("pointed", cited=[2, 1]), doc_keys)
    assert not answers_shop.pointed(question, _row("pointed", cited=[2]), doc_keys)
    # Citing the article without the server's marker is no pointing.
    assert not answers_shop.pointed(question, _row("abstained", cited=[1]), doc_keys)
    assert not answers_shop.pointed(question, _row("other", cited=[1]), doc_keys)
    assert not answers_shop.pointed(question, _row("correct", cited=[1]), doc_keys)
    unanswerable = {"kind": "unanswerable", "doc": "shipping"}
    assert not answers_shop.pointed(unanswerable, _row("pointed", cited=[1]), doc_keys)


def test_a_pointed_reply_is_graded_before_the_contradiction_check() -> None:
    from bench.answers import grade, quote_contradicting

    q = {"expect": [["free"]], "contradict": ["you pay"]}
    quote = 'Our "Returns" article says: "free from Spain; elsewhere you pay." ...'
    pointed = {"text": quote, "done": {"pointed": {"why": "other_case"}}}
    plain = {"text": quote, "done": {"pointed": None}}
    assert grade(q, pointed) == "pointed" and quote_contradicting(q, pointed)
    assert grade(q, plain) == "contradicted" and not quote_contradicting(q, plain)
    # Never correct, even when it holds every expected fact.
    fine = {"text": "Postage is free.", "done": {"pointed": {"why": "not_confirmed"}}}
    assert grade({"expect": [["free"]]}, fine) == "pointed"


def test_figures_count_pointed_apart_from_correct() -> None:
    rows = [
        _row("correct", pointed=False),
        _row("pointed", pointed=True),
        _row("abstained", pointed=False),
        _row("other", pointed=False),
        _row("abstained", kind="unanswerable", pointed=False),
        _row("other", kind="unanswerable", pointed=False),
        _row("pointed", kind="unanswerable", pointed=False, quote_contradicting=True),
    ]
    figures = answers_shop.shop_figures(rows)
    assert figures["correct_on_answerable"] == 0.25
    assert figures["pointed_on_answerable"] == 0.25
    assert figures["correct_or_pointed_on_answerable"] == 0.5
    assert figures["abstained_on_answerable"] == 0.25
    assert round(figures["abstained_on_unanswerable"], 3) == 0.333
    assert round(figures["pointed_on_unanswerable"], 3) == 0.333
    assert figures["contradicted"] == 0 and figures["pointed_quote_contradicting"] == 1


def test_one_shops_run_keeps_the_other_shops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(answers_shop, "RESULTS", tmp_path / "answers_newshop.json")
    first = answers_shop.results_merge("alpha", {"figures": {"contradicted": 0}})
    answers_shop.RESULTS.write_text(json.dumps(first), "utf-8")
    merged = answers_shop.results_merge("beta", {"figures": {"contradicted": 1}})
    assert merged["figures"] == {"alpha_contradicted": 0, "beta_contradicted": 1}
    assert set(merged["shops"]) == {"alpha", "beta"}
