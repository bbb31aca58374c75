"""Summaries and drafted cards a support admin would approve: no figure is cut, and
drafted questions are ones a shopper would ask that the section answers."""

from __future__ import annotations

from knowledge import ingest
from knowledge.card_questions import shopper_question
from knowledge.ingest import Section

WRAP = Section(
    "Gift wrapping",
    "gift-wrapping",
    "We offer gift wrapping for $4.99 per item, furniture included. "
    "A handwritten card comes with it.",
)
WRAP_ZH = Section("礼品包装", "x", "礼品包装每件收费4.99美元，附赠手写贺卡。")


def test_the_summary_prompt_shows_the_article_s_figures_whole() -> None:
    body = "Gift wrapping\nWe offer gift wrapping for $4.99 per item. A card comes with it."
    excerpt = ingest._truncate_tokens(body, 400)
    assert "$4.99 per item" in excerpt and "$4. 99" not in excerpt
    prompt = ingest.summary_prompt(title="Gift wrapping", body=body, language="en")
    assert "$4.99 per item" in prompt


def test_a_summary_sentence_with_a_cut_figure_is_dropped() -> None:
    body = "We offer gift wrapping for $4.99 per item. A card comes with it for two years."
    assert ingest.summary_check("We offer gift wrapping for $4.", body=body) == ""
    whole = "We offer gift wrapping for $4.99 per item."
    assert ingest.summary_check(whole, body=body) == whole
    # The same figure in other words is still the article's.
    assert ingest.summary_check("A card comes with it for 2 years.", body=body) != ""


def test_chinese_summaries_are_clipped_before_a_figure_not_inside_it() -> None:
    text = "礼品包装每件收费4.99美元"
    assert ingest.clip_chars(text, 10) == "礼品包装每件收费"
    assert ingest.clip_chars(text, 13).endswith("4.99美")
    assert ingest.summary_clean(text, language="zh", max_words=5) == "礼品包装每件收费"


def test_drafted_questions_are_ones_a_shopper_asks_about_the_section() -> None:
    kept = [
        "How much does gift wrapping cost?",
        "Do you gift wrap furniture?",
        "Is a card included with gift wrapping?",
    ]
    for question in kept:
        assert shopper_question(question, WRAP), question
    dropped = [
        "What are the benefits of gift wrapping for furniture?",
        "Why should I choose gift wrapping?",
        "How do I track my order?",
        "Can I pay with PayPal?",
    ]
    for question in dropped:
        assert not shopper_question(question, WRAP), question
    assert shopper_question("礼品包装多少钱？", WRAP_ZH)
    assert not shopper_question("礼品包装有什么好处？", WRAP_ZH)
    assert not shopper_question("退货要多久？", WRAP_ZH)
