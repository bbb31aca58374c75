"""The questions a section's structure gives (knowledge.doc2query.structural with the
forms of knowledge.question_forms): asked the way a shopper types them, chosen by what
the section states (a price, a duration, a rule, a place), in English and Chinese.
The articles are a made-up tea shop's, written for these tests."""

from __future__ import annotations

from knowledge import doc2query, ingest
from knowledge.shop_words import BROADER, GOODS, WordSet

TEA_ZH = """# 配送与售后

## 配送时间

付款后我们在两个工作日内发货，一般五天送达。

## 运费

订单满150元包邮，不满150元收取运费10元。

## 寄往外地

我们可以寄到杭州和苏州，不寄往海外。

## 茶具退换

已经使用过的茶具不能退换。

## 会员折扣

会员全场享受8%的折扣。
"""

TEA_EN = """# Delivery and returns

## Delivery times

We pack every order within 2 business days; delivery then takes 3 to 4 days.

## Shipping costs

Standard shipping costs €4.50 and orders over €40 ship free.

## Where we deliver

We ship to Austria, Hungary and Slovenia only. We do not ship to P.O. boxes.

## Opened tins

Opened tins cannot be returned. Sealed tins may be returned within 30 days.
"""


def _questions(text: str, language: str, words: list[WordSet] | None = None) -> dict[str, list]:
    out: dict[str, list] = {}
    for section in ingest.document_sections(data=text.encode(), source_format="markdown"):
        if section.text.strip():
            heading = section.heading.split(" > ")[-1]
            out[heading] = doc2query.structural(section, language=language, words=words or [])
    return out


def _texts(made: list) -> list[str]:
    return [q.text for q in made]


def test_chinese_questions_are_asked_by_what_the_section_states() -> None:
    made = _questions(TEA_ZH, "zh")
    every = [q for qs in made.values() for q in _texts(qs)]
    # No heading with a fixed suffix glued on.
    assert not [q for q in every if "怎么说" in q]
    # A duration is asked "how long", with the heading's "time" left out.
    assert {"配送要多久？", "配送要几天？"} <= set(_texts(made["配送时间"]))
    # A price is asked "how much"; the price section is not asked "how long".
    assert {"运费多少钱？", "运费要付多少钱？"} <= set(_texts(made["运费"]))
    assert not [q for q in _texts(made["运费"]) if "多久" in q]
    # A rule without a figure becomes a yes/no question, both ways a shopper asks it.
    assert "已经使用过的茶具能退换吗？" in _texts(made["茶具退换"])
    assert "已经使用过的茶具能不能退换？" in _texts(made["茶具退换"])
    assert "会员折扣是百分之多少？" in _texts(made["会员折扣"])


def test_chinese_places_the_section_sends_to_are_asked_one_by_one() -> None:
    made = _questions(TEA_ZH, "zh")["寄往外地"]
    texts = _texts(made)
    # The shop speaking ("我们可以寄到…") is asked back as "你们…" / "能不能…".
    assert "你们能寄到杭州和苏州吗？" in texts
    instances = [q.text for q in made if q.role == doc2query.INSTANCE]
    assert any("杭州" in q and "苏州" not in q for q in instances), instances
    assert any("苏州" in q and "杭州" not in q for q in instances), instances


def test_english_questions_are_asked_by_what_the_section_states() -> None:
    made = _questions(TEA_EN, "en")
    assert "How long does delivery take?" in _texts(made["Delivery times"])
    assert "How much does shipping cost?" in _texts(made["Shipping costs"])
    assert "How much does shipping costs cost?" not in _texts(made["Shipping costs"])
    where = _texts(made["Where we deliver"])
    assert "Do you ship to Austria, Hungary and Slovenia?" in where
    for country in ("Austria", "Hungary", "Slovenia"):
        assert f"Do you ship to {country}?" in where
    # A sentence cut at the abbreviation's full stop gives no question.
    assert not [q for q in where if "P.O" in q]
    tins = _texts(made["Opened tins"])
    assert "Can opened tins be returned?" in tins
    # "30 days" is about sealed tins, not how the opened-tins topic is asked.
    assert not [q for q in tins if q.startswith("How long")]
    # A sentence with a figure is asked as a yes/no when it states a rule with a modal.
    assert "Can sealed tins be returned within 30 days?" in tins


def test_the_shops_words_give_place_and_case_questions_in_the_sections_form() -> None:
    words = [
        WordSet("en", BROADER, ("Graz", "Linz"), ("Austria",)),
        WordSet("en", GOODS, ("teapot", "matcha whisk")),
        WordSet("zh", BROADER, ("西湖区",), ("杭州",)),
    ]
    where = _questions(TEA_EN, "en", words)["Where we deliver"]
    instances = [q.text for q in where if q.role == doc2query.INSTANCE]
    # A place under one the rule names is asked the rule's question.
    assert "Do you ship to Graz?" in instances and "Do you ship to Linz?" in instances
    assert not [q for q in instances if "teapot" in q]  # the rule is about places

    returns = """# Returns

## Returning items

Unused items can be returned within 30 days for a full refund.
"""
    made = _questions(returns, "en", words)["Returning items"]
    cases = [q.text for q in made if q.role == doc2query.INSTANCE]
    assert any("teapot" in q for q in cases), cases
    assert not [q for q in cases if ": " in q]  # no "term: question" glue
    assert "How long does returning take for a teapot?" in cases
    zh = _questions(TEA_ZH, "zh", words)["寄往外地"]
    assert "你们能寄到西湖区吗？" in [q.text for q in zh if q.role == doc2query.INSTANCE]


def test_rules_become_yes_no_questions_without_breaking_words() -> None:
    from knowledge.question_forms import rule_questions

    # 会员 is no modal 会, and 能不能 comes only before a verb.
    assert rule_questions("会员全场享受折扣。", "zh") == ["会员全场享受折扣吗？"]
    assert rule_questions("本店茶叶品种齐全。", "zh") == ["你们茶叶品种齐全吗？"]
    assert rule_questions("我们不提供货到付款。", "zh") == [
        "你们提供货到付款吗？",
        "能不能提供货到付款？",
    ]
    assert rule_questions("We are closed on public holidays.", "en") == [
        "Are you closed on public holidays?"
    ]
    assert rule_questions("Shipping is free on orders over €40.", "en") == [
        "Is shipping free on orders over €40?"
    ]


def test_a_condition_clause_is_no_rule_question() -> None:
    from knowledge.question_forms import rule_questions

    assert rule_questions("每笔订单发货后，电子发票会发送到您的邮箱。", "zh") == [
        "电子发票会发送到您的邮箱吗？"
    ]
    # 只能 is asked as written ("只能不能" is no question).
    assert rule_questions("生日日期每年只能修改一次。", "zh") == ["生日日期每年只能修改一次吗？"]
