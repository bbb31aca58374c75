"""The entailment check (knowledge.entail): the flips a lexical overlap check passed
(negation, numbers, dates, exceptions, "only", the tier a rule is about) are caught;
paraphrases with the same fact pass. Its precision and recall on its own labelled set
are measured by `make eval-answers` (bench/results/answers.json), not here."""

from __future__ import annotations

import pytest

from knowledge.entail import claim_check, label_pair, quantities

GIFT = "Gift cards expire 36 months after purchase. They cannot be exchanged for cash."
RETURNS = (
    "Items must be unworn and have their tags attached. Gold members are the exception: "
    "they can also return worn items."
)
SHIPPING = "Standard shipping takes 3 to 7 business days; Express takes 1 to 2 business days."
WRAP = (
    "You can have any item gift wrapped for $4.99. If you are a Gold member, gift wrapping "
    "is free on every order."
)


@pytest.mark.parametrize(
    ("premise", "claim", "label"),
    [
        # A flipped negation, which a word-overlap check passes.
        (GIFT, "Gift cards do not expire.", "contradicted"),
        (GIFT, "No, gift cards never expire.", "contradicted"),
        (GIFT, "Gift cards expire 12 months after purchase.", "contradicted"),
        (GIFT, "Gift cards can be exchanged for cash.", "contradicted"),
        (GIFT, "Gift cards expire 36 months after purchase.", "entailed"),
        (GIFT, "Gift cards expire three years after you buy them.", "entailed"),
        (GIFT, "You can use gift cards in any store.", "neutral"),
        # The rule's subject swapped: "unworn" -> "worn", Gold -> Silver.
        (RETURNS, "Items can be returned worn.", "contradicted"),
        (RETURNS, "Silver members can also return worn items.", "neutral"),
        (RETURNS, "Gold members can also return worn items.", "entailed"),
        (SHIPPING, "Express takes 3 to 7 business days.", "contradicted"),
        (SHIPPING, "Express takes one to two business days.", "entailed"),
        # "free for Gold members" generalised to everyone.
        (WRAP, "Gift wrapping is free for all members.", "neutral"),
        ("礼品卡自购买之日起36个月后过期。", "礼品卡永不过期。", "contradicted"),
        ("礼品卡自购买之日起36个月后过期。", "礼品卡购买三十六个月后过期。", "entailed"),
        ("每天最多领取2张代金券。每张可减5美元。", "每天最多可以领5张代金券。", "contradicted"),
        # Another period for the same figure changes it (a year / a month, 每年 / 每月).
        (
            "The subscription costs $99 a year.",
            "The subscription costs $99 a month.",
            "contradicted",
        ),
        ("高级订阅每年99美元。", "高级订阅每月99美元。", "contradicted"),
    ],
)
def test_claims(premise: str, claim: str, label: str) -> None:
    assert claim_check(claim, [premise]).label == label


TWO_RULES_ZH = "会。礼品卡自购买之日起36个月后过期，过期后卡内剩余的余额不能再使用。"
EXTENSION = (
    "Bronze members and Guests cannot get an extension, but a manager can call you back to "
    "talk about it."
)
EXCHANGE = (
    "You can exchange an item from a delivered order for the same product in another option, "
    "such as a different size or colour. You cannot exchange it for a different kind of "
    "product, for example a shirt for shoes."
)


@pytest.mark.parametrize(
    ("premise", "claim", "label"),
    [
        # A rule and its exception in the passage: restating the rule is backed by it,
        # not contradicted by the exception (dev pairs en-p059, en-p075) ...
        (
            EXCHANGE,
            "You can exchange an item for a different size of the same product.",
            "entailed",
        ),
        (EXCHANGE, "You can exchange a shirt for shoes.", "contradicted"),
        # ... but a claim that takes the exception's predicate without its subject still
        # is, and so is the exception flipped.
        (RETURNS, "Gold members cannot return worn items.", "contradicted"),
        # A Chinese sentence with two rules: the claim takes the polarity of the part it
        # restates, not of the sentence (dev pairs zh-p001, zh-p085, zh-p135, zh-p137).
        (TWO_RULES_ZH, "礼品卡购买36个月后就过期了。", "entailed"),
        (TWO_RULES_ZH, "礼品卡购买36个月后不会过期。", "contradicted"),
        (TWO_RULES_ZH, "礼品卡过期后余额还能继续使用。", "contradicted"),
        # A claim of two clauses is checked clause by clause (dev pair en-p139).
        (
            EXTENSION,
            "Bronze members and Guests can't get an extension, but a manager can call them back.",
            "entailed",
        ),
        (
            EXTENSION,
            "Bronze members can get an extension, but a manager can call them back.",
            "contradicted",
        ),
        # "neither ... nor" negates once; "nobody" negates (en-p255, en-p154).
        (
            "A processed order can be neither cancelled nor changed.",
            "A processed order can't be cancelled or changed.",
            "entailed",
        ),
        (
            "A processed order can be neither cancelled nor changed.",
            "A processed order can be cancelled.",
            "contradicted",
        ),
        (
            "Nobody at the shop can see your password.",
            "Shop staff can see your password.",
            "contradicted",
        ),
        # A bracketed English name is the Chinese word's other name (zh-p013).
        (
            "快速配送（Express）运费14.99美元，1到2个工作日送达。",
            "快速配送14.99美元，一到两个工作日就能到。",
            "entailed",
        ),
        (
            "快速配送（Express）运费14.99美元，1到2个工作日送达。",
            "快速配送14.99美元，三到七个工作日就能到。",
            "contradicted",
        ),
        # A Chinese paraphrase with 0.9 of the clause's characters (zh-p010) passes.
        (
            "用礼品卡支付订单或改换商品后的差价时，卡内余额必须足够支付全部金额。",
            "用礼品卡付款时，余额必须够付全部金额。",
            "entailed",
        ),
        # Still blocked: the figures of another day ("Sundays" is no name of the clause).
        (
            "Our stores are open Monday to Saturday from 10 am to 8 pm, and on Sunday from 11 am "
            "to 6 pm.",
            "On Sundays the stores are open from 10 am to 8 pm.",
            "neutral",
        ),
    ],
)
def test_claims_session_13(premise: str, claim: str, label: str) -> None:
    assert claim_check(claim, [premise]).label == label


def test_a_chinese_yes_with_de_is_an_answer_particle() -> None:
    """ "会的，…"/"可以的，…" open like "会，…": the body is checked, and the particle
    against the question."""
    premise = "会。礼品卡自购买之日起36个月后过期，过期后卡内剩余的余额不能再使用。"
    question = "礼品卡会过期吗？"
    assert (
        claim_check("会的，礼品卡购买36个月后过期。", [premise], question=question).label
        == "entailed"
    )
    assert (
        claim_check("不会的，礼品卡购买36个月后过期。", [premise], question=question).label
        == "contradicted"
    )


def test_a_yes_or_no_is_checked_against_the_question() -> None:
    question = "can I wash the down jacket in a machine?"
    premise = "Down jackets must not be machine washed."
    assert claim_check("Yes, you can.", [premise], question=question).label == "contradicted"
    assert claim_check("No.", [premise], question=question).label != "contradicted"
    assert (
        claim_check("Yes, gift cards do expire.", [GIFT], question="do gift cards expire?").label
        != "contradicted"
    )


def test_durations_compare_in_days_and_ranges_give_both_ends() -> None:
    months, years = quantities("36 months")[0], quantities("three years")[0]
    assert months.same(years) and not months.same(quantities("2 years")[0])
    assert [q.value for q in quantities("3-7 business days")] == [3.0, 7.0]
    assert [q.value for q in quantities("三十六个月")] == [36.0]


def test_a_hypothesis_is_entailed_only_if_every_sentence_is() -> None:
    both = "Gift cards expire 36 months after purchase. You can also swap them for cash."
    assert label_pair(GIFT, both) == "contradicted"
    assert label_pair(GIFT, "Gift cards expire 36 months after purchase.") == "entailed"


def test_a_summary_keeps_only_what_the_article_says() -> None:
    from knowledge.ingest import summary_check

    invented = (
        "Gift cards expire 36 months after purchase. A lost card can be replaced with the receipt."
    )
    # The second sentence is the one a few-shot example once put in every gift-card summary.
    assert summary_check(invented, body=GIFT) == "Gift cards expire 36 months after purchase."
    assert summary_check("Gift cards never expire.", body=GIFT) == ""


def test_a_bare_value_is_checked_with_its_question() -> None:
    tiers = "You become Silver by spending $500 in a year. You become Gold by spending $1000."
    question = "how much do I need to spend to become Silver?"
    assert claim_check("$1000.", [tiers], question=question).label != "entailed"
    assert claim_check("$500.", [tiers], question=question).label == "entailed"
    zh = "一个自然年内消费满500美元升为银卡，满1000美元升为金卡。"
    assert claim_check("1000美元", [zh], question="消费多少能升银卡").label != "entailed"


def test_chinese_states_are_not_matched_by_shared_characters() -> None:
    rule = "订单待处理时，可以修改收货地址，已处理的订单不能修改。"
    claim = "订单已经处理了，地址可以改。"
    assert claim_check(claim, [rule]).label != "entailed"


def test_a_bare_yes_or_no_that_nothing_backs_is_not_shown() -> None:
    """ "消费不够的话会从金卡直接降到普通访客吗？" got "会。" (yes): no clause of the
    membership passage aligns with the question well enough to say what the particle
    asserts, and the passage's rule (one level at a time) says no. A bare particle that
    can't be checked is unverifiable; with a body, the body still decides."""
    levels = "如果没有再次达到消费门槛，会在1月1日降一级，每次最多只降一级。"
    question = "消费不够的话会从金卡直接降到普通访客吗？"
    assert claim_check("会。", [levels], question=question).label == "neutral"
    # A bare particle the aligned clause backs still passes.
    assert claim_check("Yes.", [GIFT], question="do gift cards expire?").label == "entailed"


def test_a_bare_price_with_its_currency_is_checked_with_the_question() -> None:
    """ "铜卡要花多少钱才能升上去" got "14.99美元" (the Express upgrade's price, from the
    other cited passage): "美元" made it two terms, so it skipped the bare-value check
    that reads the question and the value together."""
    passages = [
        "一个自然年内消费满100美元升为铜卡，满500美元升为银卡。",
        "只有在订单尚未发货时才能升级为快速配送。升级费用为14.99美元。",
    ]
    question = "铜卡要花多少钱才能升上去"
    assert claim_check("14.99美元。", passages, question=question).label != "entailed"
    assert claim_check(
        "$14.99.", ["Express costs $14.99."], question="how much is express?"
    ).label == ("entailed")


def test_a_chinese_sentence_of_filler_characters_only_is_not_entailed() -> None:
    claim = claim_check("的了吗呢", ["我们的退货期为30天。"], question="退货")
    assert claim.label != "entailed"
