"""A relevant-looking passage that leaves out what the question asks is not an answer:
L2 says it doesn't know (and offers a person) instead of sending an extract of it.
And an article's introduction gets no answer card."""

from __future__ import annotations

import pytest

from knowledge import cards, ingest, services
from knowledge import text as ktext
from knowledge.answer import answer_plan
from knowledge.coverage import figure_kind, question_coverage
from knowledge.models import AnswerCard
from knowledge.question_type import is_wh

WARRANTY = (
    "Every pair of boots has a one-year warranty against defects in materials and "
    "stitching. The warranty does not cover normal wear, such as worn heels or scuffed leather."
)


def test_a_question_about_something_the_passage_never_mentions_is_not_covered() -> None:
    asked = question_coverage("is the leather on your boots ethically sourced?", [WARRANTY])
    assert asked.missing == ["ethically", "sourced"] and not asked.answers
    # The shop's words for the same thing count ("bought" is "purchase"), and how it
    # is asked ("how fast", "whats", "..., right?") is not what it is about.
    covered = question_coverage(
        "whats the warranty on boots I bought, right?", ["Boots purchased here: " + WARRANTY]
    )
    assert covered.missing == [] and covered.answers
    # One word missing is a paraphrase, not a new topic.
    assert question_coverage("does the boot warranty cover stitching?", [WARRANTY]).answers
    # American spelling and "pick up" find the shop's "colours" and "pickup".
    jacket = "The jacket comes in three colours. Store pickup is free."
    assert question_coverage("what colors does the jacket come in", [jacket]).missing == []
    assert question_coverage("can I pick up in a store", [jacket]).missing == []


EXPRESS = "Express shipping costs $14.99 and takes 1 to 2 business days."


def test_a_yes_no_question_about_a_thing_the_passage_never_names_is_not_covered() -> None:
    """One missing word passes as a paraphrase, but not the noun a yes/no question is
    about: the Express passage says nothing about weekends."""
    weekends = question_coverage("does express shipping deliver on weekends?", [EXPRESS])
    assert weekends.missing == ["weekends"] and weekends.missing_nouns == ["weekends"]
    assert not weekends.answers
    # Routing keeps its bar (nouns=False): L2 gets the question and says it doesn't know.
    assert question_coverage(
        "does express shipping deliver on weekends?", [EXPRESS], nouns=False
    ).answers
    # Asked what or how, the missing word may be what the answer supplies.
    assert question_coverage("how fast is express shipping on weekends?", [EXPRESS]).answers
    # A tag question states a claim in the shopper's words; the passage corrects it.
    tag = question_coverage("express shipping kicks in fast right?", [EXPRESS])
    assert tag.missing == ["kicks"] and tag.missing_nouns == [] and tag.answers
    # Goods in general ("stuff") and the shopper describing themselves ("I'm Gold")
    # are not what is asked about.
    returns = "Items must be unworn to be returned; Gold members can also return worn items."
    generic = question_coverage("can Gold members return worn stuff?", [returns])
    assert "stuff" not in generic.terms and generic.missing == [] and generic.answers
    me = question_coverage("我是银卡，可以退穿过的商品吗？", ["金卡会员穿过的商品也可以退。"])
    assert me.missing_nouns == [] and me.answers
    # Chinese: the noun's head character in the passage counts (纯棉 is a kind of 棉).
    shirt = "T恤可选棉或涤纶材质。"
    assert question_coverage("T恤是纯棉的吗", [shirt]).answers
    assert not question_coverage("快速配送周末送吗？", ["快速配送需要1到2个工作日。"]).answers


def test_chinese_words_by_their_characters() -> None:
    passage = "结账时可以选择到我们的门店免费自提。"
    assert not question_coverage("门店有停车场和充电桩吗", [passage]).answers
    assert question_coverage("门店自提免费吗", [passage]).answers
    # A longer word counts when half its characters are there (皮夹克: the 夹克).
    assert question_coverage("皮夹克能修吗", ["夹克在2年内免费维修。"]).missing == []


@pytest.mark.django_db
def test_l2_says_it_does_not_know_instead_of_an_unrelated_extract(kb: dict[str, int]) -> None:
    plan = answer_plan(question="is the leather on your boots ethically sourced?", language="en")
    assert plan.generation is None and plan.card_id is None
    assert plan.actions == ["offer:L3", "offer:human"]
    assert plan.retrieval["question_coverage"]["answers"] is False
    # A question the article answers still gets its passages.
    plan = answer_plan(question="how long is the warranty on the boots?", language="en")
    assert plan.generation is not None and plan.retrieval["question_coverage"]["answers"]


def test_an_introduction_to_subsections_is_not_a_card() -> None:
    intro = ingest.Section(heading="Boots FAQ", anchor="boots-faq", text="Questions about boots.")
    sub = ingest.Section(heading="Boots FAQ > Warranty", anchor="warranty", text=WARRANTY)
    assert cards.is_introduction(intro, [sub])
    assert not cards.is_introduction(sub, [])
    long_intro = ingest.Section(heading="Boots FAQ", anchor="boots-faq", text=WARRANTY * 2)
    assert not cards.is_introduction(long_intro, [sub])


@pytest.mark.django_db
def test_cards_sync_skips_the_introduction(settings: object) -> None:
    doc = services.document_create(
        title="Boots",
        text="# Boots FAQ\n\nQuestions about our boots.\n\n## Warranty\n\n" + WARRANTY + "\n",
        language="en",
        source_format="markdown",
    )
    assert services.document_ingest(document_id=doc.pk).result == "ready"
    cards.cards_sync(document_id=doc.pk)
    assert [c.heading for c in AnswerCard.objects.filter(document=doc)] == ["Boots FAQ > Warranty"]


def test_taggers_warm_loads_both_taggers_before_the_first_question() -> None:
    """The server's warm-up (config/asgi.py) calls this: afterwards spaCy's English
    pipeline is loaded and a Chinese question is tagged from jieba's loaded dictionary."""
    from knowledge import text

    text.taggers_warm()
    assert text._spacy_en is not None
    assert "周末" in text.specific_nouns("你们周末发货吗")


def test_goods_in_general_count_neither_way() -> None:
    """Words for goods in general ("things", 东西) name no particular thing a passage
    would have to mention: a question is neither covered nor uncovered by them (fast,
    spaCy's small tagger)."""
    store = "You can return an item by mail, in one of our stores, or at a drop-off centre."
    asked = question_coverage("can I return things at a physical store?", [store])
    assert "things" not in asked.terms and asked.missing == ["physical"] and asked.answers
    damaged = "收到的商品有污渍或损坏时，可以按您会员等级的退货规则退货。"
    zh = question_coverage("东西送到时是坏的，可以退货吗？", [damaged])
    assert "东西" not in zh.terms
    # A question about something the passage never mentions still isn't covered.
    assert not question_coverage("can I return things bought on eBay?", [store]).answers


def test_retrieval_finds_a_long_chinese_word_by_its_characters() -> None:
    """jieba cuts 登山鞋 as one word; the passage says 登山靴. Retrieval's keyword share
    counts a three-character word when two of its characters are there; a
    two-character word must be there as it is, and so must a set phrase of four."""
    from knowledge import lexicon

    boots = "登山靴有皮革和合成材料两种材质。"
    assert lexicon.keyword_coverage(["登山鞋", "真皮"], boots, frozenset()) == 0.5
    assert lexicon.keyword_coverage(["真皮"], boots, frozenset()) == 0.0
    assert lexicon.keyword_coverage(["邮政信箱"], boots, frozenset()) == 0.0
    payment = "我们接受信用卡、借记卡、PayPal和礼品卡。退款会退回原支付方式。"
    assert lexicon.keyword_coverage(["货到付款"], payment, frozenset()) == 0.0


def test_the_shops_other_words_and_broader_rules_count_for_coverage() -> None:
    """knowledge.lexicon: the shopper's word for what the passage names ("postage":
    shipping, 包邮: 免运费), a rule stated for what covers it (electronics for a phone,
    someone else for a husband), and a kind of goods under a rule for items, which
    exempts it from the noun rule but not from the share."""
    shipping = "Standard shipping is free when your order is over $50."
    assert question_coverage("when is postage free on my order?", [shipping]).answers
    # A tag question's own figure is what the passage corrects: not a missing word.
    assert question_coverage("free shipping starts at $75, right?", [shipping]).answers
    recycling = "We only accept clothing and shoes; we do not take electronics or bags."
    assert "phones" not in question_coverage("do you take phones?", [recycling]).missing
    zh = question_coverage("旧手机能回收吗？", ["我们只回收衣服和鞋子，不回收电子产品。"])
    assert "手机" not in zh.missing
    pickup = "Someone else can collect your order only if you add their name at checkout."
    assert question_coverage("can my husband collect my order?", [pickup]).answers
    exchange = "You can exchange an item from a delivered order for another size."
    jeans = question_coverage("can I exchange jeans for another size?", [exchange])
    assert jeans.missing == ["jeans"] and jeans.answers
    stitching = "Stitching costs $9.50 per item."
    skiing = question_coverage("is the fleece jacket warm for skiing?", [stitching])
    assert not skiing.answers
    # A set phrase of four characters is not found by half of them (货到付款 is not the
    # 付款 and 到账 of a refund passage).
    refund = "付款后退款到账需要5到7个工作日。"
    assert "货到付款" in question_coverage("你们支持货到付款吗？", [refund]).missing


def test_shop_words_jieba_lacks_are_cut_as_words() -> None:
    from knowledge import text as ktext

    words = ktext.question_keywords("买多少钱包邮？")
    assert "包邮" in words and "钱包" not in words
    assert "自提" in ktext.question_keywords("我老公能帮我去取自提订单吗？")


def test_how_a_question_is_asked_is_not_what_it_is_about() -> None:
    """ "how long until", "after a while", 咋办 and 多少钱 ask; they name nothing a passage
    must hold. "how long until the money is back on my PayPal?" missed "until" and
    "money" (half its words) against the refund-timing passage and was not answered."""
    timing = (
        "Refunds go back to your original payment method. Gift card refunds are "
        "immediate; card and PayPal refunds take 5 to 7 business days."
    )
    asked = question_coverage("how long until the money is back on my PayPal?", [timing])
    assert "until" not in asked.terms and asked.answers
    expiry = "Yes. A gift card expires 36 months after it was purchased."
    assert "while" not in question_coverage("do gift cards expire after a while?", [expiry]).terms
    for filler in ("咋办", "多少钱", "哪里"):
        assert filler not in ktext.question_keywords(f"礼品卡{filler}")


def test_retrieval_relevance_leaves_out_goods_figures_and_glued_verbs() -> None:
    """The keyword share that marks a passage relevant, as L2's coverage check counts:
    goods in general name nothing, a quantity counts when the passage has it in digits,
    and a word jieba glued to 能/要/去 is looked up by its other character."""
    from knowledge import lexicon

    def share(question: str, passage: str) -> float:
        return lexicon.keyword_coverage(ktext.question_keywords(question), passage, frozenset())

    repairs = "超过2年后，每件商品维修统一收费25美元。我们不维修在其他商店购买的商品。"
    assert share("过了两年修拉链要多少钱", repairs) >= 0.5  # 两年 is 2年; 过 in 超过
    vouchers = "每天最多领取2张代金券，代金券有效期30天。"
    assert share("代金券一天最多能领几张", vouchers) >= 0.5  # 能领: 领取
    # Goods in general count neither way; a question about nothing there still fails.
    assert share("东西坏了能退吗", "收到的商品有污渍或损坏时，可以退货。") == share(
        "坏了能退吗", "收到的商品有污渍或损坏时，可以退货。"
    )
    assert share("你们在上海有实体店吗", repairs) < 0.5


def test_shoppers_spellings_and_question_words_name_nothing() -> None:
    """From probe3's misses: "im"/"dont"/"ur" typed without the apostrophe
    and 啥意思/才能 count as missing words no passage has. "im silver and premium
    charged me $15 too much" covered 0.67 of its words with "im" and stayed with the
    large tier, which abstains for a shopper nobody signed in."""
    assert ktext.question_keywords("im gold, dont u have free hemming for ur members") == [
        "gold",
        "free",
        "hemming",
        "members",
    ]
    assert ktext.question_keywords("退款一直显示处理中是啥意思")[-1] != "啥意思"
    assert "才能" not in ktext.question_keywords("铜卡要花多少钱才能升上去")
    assert "go" not in ktext.question_keywords("how fast does my level go up")
    billing = (
        "If you are Gold, a wrongly charged amount is always refunded. If you are Silver, "
        "it is refunded when the wrong amount is less than $10."
    )
    asked = question_coverage("im silver and premium charged me too much", [billing])
    assert "im" not in asked.terms


def test_the_shops_other_words_from_probe3() -> None:
    """Everyday words for what the articles name (written for the shop's domain): a tee
    is a (T-)shirt, spending is purchases, the neck size is the collar, tips are advice,
    posting is mail; 太贵/太高, 退点/退还, 店里/门店, 没货/缺货, 升上去/升为, 花(钱)/消费.
    Each is what kept a passage that answers the question from counting as covering it."""
    cases = [
        ("what's the neck size on a large shirt?", "Shirt collar sizes: 16.5 in large.", "neck"),
        (
            "how much do i need to spend to get to silver",
            "Silver after $500 of purchases.",
            "spend",
        ),
        ("any tips to clean sneakers?", "The only cleaning advice for sneakers.", "tips"),
        ("can i drop my return off instead of posting it?", "Return by mail.", "posting"),
        ("运费太贵了能退点吗", "如果您觉得运费太高，我们可以退还5.99美元。", "太贵"),
        ("运费太贵了能退点吗", "如果您觉得运费太高，我们可以退还5.99美元。", "退点"),
        ("退货能拿到店里退吗", "退货可以到我们的门店办理。", "店里"),
        ("我要的码没货了", "如果想要的尺码缺货，请告诉我们。", "没货"),
        ("铜卡要花多少钱才能升上去", "一个自然年内消费满100美元升为铜卡。", "花"),
        ("铜卡要花多少钱才能升上去", "一个自然年内消费满100美元升为铜卡。", "升上去"),
        (
            "how fast does my level go up after i hit the spend?",
            "The purchase that qualifies you.",
            "hit",
        ),
        ("what happens next year?", "It lasts until the end of the following year.", "next"),
    ]
    for question, passage, word in cases:
        asked = question_coverage(question, [passage])
        assert word in asked.terms and word not in asked.missing, (question, word)
    # What the passage doesn't say is still missing; the tee is found as a shirt.
    asked = question_coverage("does the tee come in green?", ["T-shirts in red."])
    assert "green" in asked.missing and "tee" not in asked.missing


def test_a_word_glued_to_a_particle_is_found_by_its_content() -> None:
    """jieba cuts "处理中是啥意思" into 处理/中是/啥意思 and "铜卡要花" into 铜卡要/花: the
    particle (是, 要) is no part of what is asked."""
    from knowledge import lexicon

    status = "退款状态分为未开始、处理中和已完成。处理中表示商品已到仓库，正在处理退款。"
    keywords = ktext.question_keywords("退款一直显示处理中是啥意思")
    assert "中是" in keywords  # the cut this test is about
    assert lexicon.keyword_coverage(keywords, status, frozenset()) > lexicon.keyword_coverage(
        [k for k in keywords if k != "中是"] + ["中非"], status, frozenset()
    )
    levels = "会员分为普通访客、铜卡、银卡和金卡。一个自然年内消费满100美元升为铜卡。"
    assert "铜卡要" not in question_coverage("铜卡要花多少钱才能升上去", [levels]).missing


def test_an_extract_keeps_the_clause_a_pronoun_points_back_to() -> None:
    """ "how am i supposed to clean my sneakers, any tips?" picked "it is the only washing
    and cleaning advice we give" (it shares "advice" and "cleaning") without "Follow the
    care label sewn into each item;", the clause that says what "it" is."""
    from knowledge.grounding import passage_extract

    care = (
        "Follow the care label sewn into each item; it is the only washing and cleaning "
        "advice we give. We do not publish our own washing instructions."
    )
    extract = passage_extract(
        "how am i supposed to clean my sneakers, any tips?", [care], max_chars=400
    )
    assert extract.startswith("Follow the care label")


def test_a_passage_about_another_kind_of_goods_does_not_answer() -> None:
    """ "how long is the warranty on the sneakers?" found the boots' warranty, which has
    every other word of it ("how long", "warranty"), and got its extract. A rule stated
    for items in general still answers a question about a kind of goods."""
    from knowledge.answer import other_goods

    question = "how long is the warranty on the sneakers?"
    coverage = question_coverage(question, [WARRANTY])
    assert coverage.answers  # the coverage check alone lets it through
    assert other_goods(question, coverage, [WARRANTY]) == ["sneakers"]
    boots = "how long is the warranty on the boots?"
    assert other_goods(boots, question_coverage(boots, [WARRANTY]), [WARRANTY]) == []
    general = "Items must be unworn and have their tags attached to be returned."
    jeans = "can I return jeans without tags?"
    assert other_goods(jeans, question_coverage(jeans, [general]), [general]) == []


def test_a_wh_questions_verbs_say_how_it_asks_not_what() -> None:
    """ "where do i look to find the inseam of a particular pair of jeans" missed look,
    find and particular in the inseam section and got "I don't know" (probe4); in a
    wh-question the verbs and adverbs say how it is asked. A yes/no question's verb is
    what it asks about, so there every word still counts."""
    inseam = (
        "Jeans FAQ How long is the leg? Our jeans come in three inseam lengths: short (30 "
        "inches), regular (32 inches) and long (34 inches). The inseam is listed on each "
        "product page under Size and fit."
    )
    where = question_coverage(
        "where do i look to find the inseam of a particular pair of jeans", [inseam]
    )
    assert where.answers and where.missing == ["particular"]
    assert not question_coverage(
        "is the leather on your boots ethically sourced?", [WARRANTY]
    ).answers
    two_factor = (
        "重置两步验证 如果无法使用两步验证设备，我们会把重置码发送到账户绑定的邮箱。"
        "无法提供该邮箱时，可以改用PIN码或安全问题验证身份。"
    )
    assert question_coverage("手机丢了收不到验证码怎么办", [two_factor]).answers
    assert is_wh("at what basket total do I stop paying for postage?")
    assert not is_wh("do you deliver on sundays?")


def test_a_figure_of_the_kind_the_passage_states_is_answered_by_its_own() -> None:
    """ "礼品卡买了两年了还能用吗" missed 两年 (the passage says 36个月) and "overcharged me
    $30" missed 30 (the passage's figure is $10): the passage answers with its own
    figure of that kind, and the entailment check judges the figures. A figure of a kind
    the passage doesn't state is still missing."""
    expiry = "礼品卡会过期吗 会。礼品卡自购买之日起36个月后过期，过期后卡内剩余的余额不能再使用。"
    assert question_coverage("礼品卡买了两年了还能用吗", [expiry]).answers
    billing = (
        "Billed twice or billed the wrong amount If you are Silver, a wrongly charged "
        "amount is refunded when the wrong amount is less than $10."
    )
    coverage = question_coverage("silver member, billed $30 too much, refunded?", [billing])
    assert "30" not in coverage.missing
    assert figure_kind("2", "bought this 2 months ago") == "duration"
    assert figure_kind("30", "overcharged me $30") == "money"
    assert figure_kind("20", "warm enough at -20?") == ""
    assert "20" in question_coverage("is the jacket warm at -20?", [billing]).missing
