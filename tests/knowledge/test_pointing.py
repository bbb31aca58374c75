"""Pointing (knowledge.pointing) and the case a question names (knowledge.named_case),
on made-up articles of a bicycle shop: real spaCy, jieba, embedders and index."""

from __future__ import annotations

from typing import Any

import pytest

from knowledge import named_case, pointing

BIKES_EN = """# Bicycle delivery

Everything about how your new bicycle reaches you.

## Where we deliver

We deliver bicycles to Spain and Portugal only. Orders to other countries are
cancelled and refunded.

## Assembly at home

A mechanic assembles the bicycle at your door for a fee of $35. Assembly takes about
forty minutes.

## Frame warranty

Every frame has a 5-year warranty against cracks. Paint scratches are not covered.
"""

BIKES_ZH = """# 自行车配送

## 配送范围

我们只把自行车配送到广东省和福建省。其他省份的订单会被取消并退款。

## 上门组装

技师上门组装自行车，收费200元，大约需要四十分钟。

## 车架保修

所有车架享有5年保修，仅限裂纹，划痕不在保修范围内。
"""


def _ingest(title: str, text: str, language: str) -> int:
    from knowledge import services

    doc = services.document_create(
        title=title, text=text, language=language, source_format="markdown"
    )
    services.document_ingest(document_id=doc.pk)
    return doc.pk


# -- the named case --------------------------------------------------------------------------
def test_places_named_in_english_questions() -> None:
    assert "Valencia" in named_case.places_in("Can you deliver my new bike to Valencia?")
    # The small model tags no entity here: a proper noun after a place preposition.
    assert "Ghent" in named_case.places_in("I'm sending the saddle back from Ghent. Who pays?")
    assert named_case.places_in("how long is the frame warranty?") == ()


def test_places_named_in_chinese_questions() -> None:
    assert "成都" in named_case.places_in("寄到成都要多少钱")
    assert named_case.places_in("车架保修多久") == ()


def test_amounts_and_thresholds() -> None:
    assert named_case.amounts_in("my basket is €42, is delivery free?") == (42.0,)
    assert named_case.amounts_in("购物车里有300元的东西") == (300.0,)
    bounds = named_case.thresholds_in(
        "Orders of €40 or more ship free; orders under €40 pay €4.50."
    )
    assert named_case.Threshold(40.0, at_least=True) in bounds
    assert named_case.Threshold(40.0, at_least=False) in bounds
    # A price on its own is no branch's bound.
    assert named_case.thresholds_in("Assembly costs $35.") == []
    assert named_case.thresholds_in("订单满300元免运费") == [named_case.Threshold(300.0, True)]


def test_a_reply_for_another_place_is_a_mismatch() -> None:
    question = "how much is delivery to Valencia?"
    assert named_case.branch_mismatch(question, "Delivery to Lisbon costs €19.")
    # The question's own place in the reply: the branch covers it.
    assert not named_case.branch_mismatch(question, "Delivery to Valencia costs €19.")
    # No place in the reply: nothing to contradict.
    assert not named_case.branch_mismatch(question, "Delivery takes three days.")
    assert named_case.branch_mismatch("寄到成都运费多少", "寄往深圳的订单运费为30元。")
    assert not named_case.branch_mismatch("寄到成都运费多少", "寄往成都的订单运费为30元。")


def test_a_tiered_rule_without_the_named_sum_is_a_mismatch() -> None:
    question = "my basket is €42, how many free bottle cages do I get?"
    tiers = "Orders of €30 or more get one free cage, orders of €80 or more get two."
    assert named_case.branch_mismatch(question, tiers)
    # One bound is the rule's answer for any sum.
    assert not named_case.branch_mismatch(question, "Orders of €30 or more get one free cage.")
    assert not named_case.branch_mismatch(question, "Orders over €50 get a free cage.")
    # The tier the question names is stated.
    assert not named_case.branch_mismatch(
        "is it one cage from €30?", "From €30 you get one cage, from €80 two."
    )
    assert not named_case.branch_mismatch("how long is the warranty?", tiers)


# -- pointing ----------------------------------------------------------------------------------
@pytest.mark.django_db
def test_points_at_the_section_a_question_is_clearly_about(settings: Any) -> None:
    settings.TIERDESK_KB_ANSWERABILITY = False  # the thresholds' own test
    doc = _ingest("Bicycle delivery", BIKES_EN, "en")
    pointer = pointing.clearly_about("do you deliver bikes to Valencia?", "en")
    assert pointer is not None
    assert pointer.passage.document_id == doc
    assert "Where we deliver" in pointer.passage.heading
    assert pointer.similarity >= settings.TIERDESK_KB_POINT_MIN_SIMILARITY
    assert pointer.lead >= settings.TIERDESK_KB_POINT_MIN_LEAD
    text = pointing.pointed_text("do you deliver bikes to Valencia?", "en", pointer)
    assert text.startswith('Our "Bicycle delivery" article says: "')
    assert "Spain and Portugal" in text
    assert "a person" in text
    # Never a yes or a no the section doesn't state.
    assert not text.lower().startswith(("yes", "no"))
    marker = pointer.record("not_confirmed")
    assert marker["document_id"] == doc and marker["why"] == "not_confirmed"


@pytest.mark.django_db
def test_no_pointer_for_an_unrelated_question_or_when_off(settings: Any) -> None:
    _ingest("Bicycle delivery", BIKES_EN, "en")
    assert pointing.clearly_about("what is the best pizza topping?", "en") is None
    settings.TIERDESK_KB_POINT = False
    assert pointing.clearly_about("do you deliver bikes to Valencia?", "en") is None


@pytest.mark.django_db
def test_a_question_between_two_sections_is_not_clearly_about_one(settings: Any) -> None:
    settings.TIERDESK_KB_ANSWERABILITY = False  # the thresholds' own test
    _ingest("Bicycle delivery", BIKES_EN, "en")
    # Raise the lead the best section needs above anything two near sections leave.
    settings.TIERDESK_KB_POINT_MIN_LEAD = 0.9
    assert pointing.clearly_about("do you deliver bikes to Valencia?", "en") is None


@pytest.mark.django_db
def test_points_in_chinese_with_the_multilingual_embedder(settings: Any) -> None:
    settings.TIERDESK_KB_ANSWERABILITY = False  # the thresholds' own test
    _ingest("自行车配送", BIKES_ZH, "zh")
    pointer = pointing.clearly_about("组装要多少钱", "zh")
    assert pointer is not None
    assert "上门组装" in pointer.passage.heading
    text = pointing.pointed_text("组装要多少钱", "zh", pointer)
    assert text.startswith("我们的《自行车配送》一文写道：“")
    assert "200元" in text and "人工客服" in text
    # A place the article doesn't name is as near to every section: no pointer.
    assert pointing.clearly_about("能把自行车送到成都吗", "zh") is None
