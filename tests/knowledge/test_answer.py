"""The L2 answer plan: context under a budget, citations, "don't know" with an offer,
the dialogue's L2 branch and the escalation when the shopper accepts."""

from __future__ import annotations

from typing import Any

import pytest

from chatbot.dialogue import Dialogue, TurnContext
from knowledge.answer import DONT_KNOW, answer_plan, coverage_first
from knowledge.grounding import answer_grounding, answer_guard, passage_extract
from knowledge.retrieval import Passage
from knowledge.text import estimate_tokens
from tests.kb import passage as kb_passage

pytestmark = pytest.mark.django_db


def test_answer_plan_cites_what_it_puts_in_the_prompt(kb: Any) -> None:
    plan = answer_plan(question="how much is gift wrapping?", language="en")
    assert plan.answered and plan.role == "fallback"
    assert plan.citations[0]["title"] == "Pricing FAQ"
    assert plan.citations[0]["anchor"] == "gift-wrapping"
    assert "4.99" in plan.citations[0]["snippet"]
    assert plan.generation is not None and plan.generation.messages is not None
    user = plan.generation.messages[-1].content
    assert "Gift wrapping" in user and user.rstrip().endswith("how much is gift wrapping?")
    # Every cited passage is in the prompt, nothing uncited is.
    for cite in plan.citations:
        assert cite["title"] in user
    assert plan.retrieval["answered"] and plan.retrieval["keywords"] == ["gift", "wrapping"]


def test_context_stays_under_the_token_budget(kb: Any, settings: Any) -> None:
    settings.TIERDESK_KB_CONTEXT_TOKENS = 90
    plan = answer_plan(
        question="what are the boots made of, and is there a warranty on them?", language="en"
    )
    assert plan.generation is not None and plan.generation.messages is not None
    passages = plan.generation.messages[-1].content.split("\n\n")[0]
    assert estimate_tokens(passages) <= 90 + 40  # budget + labels and the first passage's trim
    assert 1 <= len(plan.citations) <= 3


def test_fast_role_gets_a_few_shot_completion_prompt(kb: Any) -> None:
    plan = answer_plan(question="靴子防水吗？", language="zh", role="fast")
    assert plan.generation is not None and plan.generation.prompt is not None
    # The sanitizer normalises full-width punctuation; the question itself is kept.
    assert "问题：靴子防水吗" in plan.generation.prompt
    assert plan.generation.prompt.endswith("回答：")
    assert plan.generation.stop == ("\n",)


def test_nothing_relevant_means_dont_know_and_an_offer(kb: Any) -> None:
    plan = answer_plan(question="what is the capital of Peru?", language="en")
    assert not plan.answered and plan.text == DONT_KNOW["en"]
    assert plan.citations == [] and plan.actions == ["offer:L3", "offer:human"]


def _turn(text: str, state: dict[str, Any], lang: str = "en") -> Any:
    ctx = TurnContext(text=text, language=lang, state=state, customer_id="", history=[])
    return Dialogue(ctx).plan(), ctx


def test_dialogue_routes_l2_to_the_knowledge_base(kb: Any, seeded_shop: None) -> None:
    plan, _ = _turn("are the boots waterproof, can I wear them in the rain?", {})
    assert plan.tier == "L2" and plan.generation is not None
    assert plan.citations and plan.citations[0]["title"] == "Boots FAQ"
    assert plan.retrieval["passages"][0]["relevant"]


def test_dont_know_then_yes_escalates_the_original_question(
    kb: Any, seeded_shop: None, settings: Any
) -> None:
    # With the grounded guard on, L3 abstains when nothing is on record for a question
    # (tests/chatbot/test_l3_grounded.py); here what is under test is which question
    # the "yes" sends to L3.
    settings.TIERDESK_L3_GROUNDING_GUARD = False
    state: dict[str, Any] = {}
    # A product the catalogue sells: the large tier has its rows to answer from.
    question = "what is the washing temperature for the yoga mat?"
    plan, _ = _turn(question, state)
    assert plan.tier == "L2" and plan.generation is None and "offer:L3" in plan.actions
    assert state["pending_offer"]["question"] == question
    plan, _ = _turn("yes", state)
    assert plan.tier == "L3" and plan.role == "large" and plan.generation is not None
    assert plan.generation.messages is not None
    assert question in plan.generation.messages[-1].content
    assert "pending_offer" not in state


def test_grounding_check_catches_invented_numbers_and_claims() -> None:
    passages = ["Gift wrapping costs $4.99 per item and a card is included at no extra cost."]
    assert answer_grounding("Gift wrapping costs $4.99 per item.", passages).grounded
    assert answer_grounding("I don't know. Sorry!", passages).grounded
    bad = answer_grounding("Gift wrapping costs $5.99 per item.", passages)
    assert not bad.grounded and bad.claims[0].missing_numbers == ["5.99"]
    assert not answer_grounding("Wrapping is free for students on Tuesdays.", passages).grounded


WRAPPING = [
    "Gift wrapping costs $4.99 per item and a card is included at no extra cost. "
    "Wrapped items ship in plain boxes so the gift stays a surprise."
]


def test_guard_passes_a_grounded_answer_unchanged() -> None:
    answer = "Gift wrapping costs $4.99 per item, and a card is included."
    out = answer_guard(answer, WRAPPING, question="how much is gift wrapping?", extract="x")
    assert out.verdict == "passed" and out.text == answer and out.unsupported == []


def test_guard_drops_only_the_invented_sentence() -> None:
    answer = (
        "Gift wrapping costs $4.99 per item. "
        "Members get it free on their birthday month with code BDAY10."
    )
    out = answer_guard(answer, WRAPPING, question="how much is gift wrapping?", extract="x")
    assert out.verdict == "trimmed"
    assert out.text == "Gift wrapping costs $4.99 per item."
    assert out.unsupported == ["Members get it free on their birthday month with code BDAY10."]
    assert answer_grounding(out.text, WRAPPING).grounded


def test_guard_sends_the_extract_when_nothing_is_backed() -> None:
    extract = passage_extract("how much is gift wrapping?", WRAPPING, max_chars=320)
    out = answer_guard(
        "Wrapping is $7.50 and takes three weeks.",
        WRAPPING,
        question="how much is gift wrapping?",
        extract=extract,
    )
    assert out.verdict == "extract" and out.text == extract
    assert answer_grounding(out.text, WRAPPING).grounded


def test_extract_picks_the_sentences_that_answer_in_their_order() -> None:
    passages = [
        "Boots are water resistant. Clean them with a damp cloth. Never put them in a dryer.",
        "Shipping is free over $50.",
    ]
    assert passage_extract("can I put them in the dryer?", passages, max_chars=300) == (
        "Never put them in a dryer."
    )
    # Two sentences sharing keywords with the question, in the passage's order, and the
    # negated rule right after them: the limit of the cleaning advice.
    both = passage_extract("clean boots water", passages, max_chars=300)
    assert both == (
        "Boots are water resistant. Clean them with a damp cloth. Never put them in a dryer."
    )
    # Within the length cap: the best sentence only.
    assert passage_extract("clean boots water", passages, max_chars=30) == (
        "Boots are water resistant."
    )
    # The passage that covers more of the question wins over one that repeats part of
    # it in more sentences (the payment passage came before the expiry one here).
    gift = [
        "You can pay with a gift card. A gift card balance must cover the full amount.",
        "Yes. A gift card expires 36 months after it was purchased.",
    ]
    assert passage_extract("do gift cards expire?", gift, max_chars=300) == (
        "A gift card expires 36 months after it was purchased."
    )
    zh = passage_extract("礼品卡会过期吗", ["礼品卡永不过期。门店营业到晚上九点。"], max_chars=100)
    assert zh == "礼品卡永不过期。"


def _passage(chunk_id: int, heading: str, text: str, *, title: str) -> Passage:
    """A relevant retrieved passage, ranked by its chunk id, for coverage_first."""
    passage: Passage = kb_passage(chunk_id, heading, text, title=title)
    return passage


def test_the_passage_holding_the_questions_words_goes_first() -> None:
    """Ranked second, the section that names the sneakers still comes first for "what
    are the sneakers made of?"; among passages that hold as much, rank order stays."""

    def passage(chunk_id: int, heading: str, text: str) -> Passage:
        return _passage(chunk_id, heading, text, title="Care")

    boots = passage(1, "What are the boots made of?", "The boots are made of leather.")
    sneakers = passage(2, "What are the shoes made of?", "The sneakers are made of canvas.")
    shirts = passage(3, "What are the shirts made of?", "The shirts are made of cotton.")
    order = coverage_first("what are the sneakers made of", [boots, sneakers, shirts])
    assert order == [sneakers, boots, shirts]
    assert coverage_first("what is it made of", [boots, sneakers]) == [boots, sneakers]


def test_an_articles_intro_does_not_beat_the_section_that_states_the_rule() -> None:
    """Both hold "cancel" and "order" with their headings (every heading path repeats
    the article's title); only the section's own sentence states the rule."""

    def passage(chunk_id: int, heading: str, text: str) -> Passage:
        return _passage(chunk_id, heading, text, title="Cancelling or changing an order")

    # The lead: its heading is the article's title.
    intro = passage(1, "Cancelling or changing an order", "What you can change about an order.")
    rule = passage(
        2,
        "Cancelling or changing an order > Cancelling an order",
        "You can cancel an order only while it is pending.",
    )
    assert coverage_first("I want to cancel an order", [intro, rule]) == [rule, intro]
    # Even when the lead's own words hold the question's, the section goes first.
    assert coverage_first("what can I change about an order", [intro, rule]) == [rule, intro]
    # Among sections, rank order stays when their own words hold as much.
    other = passage(3, "Cancelling or changing an order > Refunds", "An order is refunded.")
    assert coverage_first("order", [other, rule]) == [other, rule]


# -- what the shopper gets when the check drops part of the reader's answer ----------------
MEMBERSHIP_ZH = (
    "会员等级有效期到下一个自然年年底。"
    "如果没有再次达到消费门槛，会在1月1日降一级，每次最多只降一级。"
)


async def _guarded(text: str, *, question: str, passages: list[str], extract: str) -> str:
    """``text`` through the L2 guard a few characters at a time, as a stream would."""
    from chatbot.answerers.reply_guards import EntailmentGuard

    guard = EntailmentGuard(
        question=question, passages=passages, extract=extract, dont_know="DONT_KNOW"
    )
    shown = ""
    for i in range(0, len(text), 5):
        assert guard.feed(text[i : i + 5], {}) == ""
        shown += await guard.drain()
    tail = await guard.finish(shown)
    assert tail is not None
    return shown + tail


async def test_a_bare_yes_left_by_the_check_is_followed_by_the_passages_rule() -> None:
    """The reader answered "Yes." and a sentence the check dropped (a changed figure):
    "Yes." alone said nothing of the rule; the extract's sentences follow it."""
    question = "do gift cards expire?"
    passage = "Yes. A gift card expires 36 months after it was purchased."
    extract = passage_extract(question, [passage], max_chars=320)
    shown = await _guarded(
        "Yes. A gift card expires 12 months after purchase.",
        question=question,
        passages=[passage],
        extract=extract,
    )
    assert shown.startswith("Yes.")
    assert "12 months" not in shown  # the dropped sentence never shows
    assert "36 months" in shown


async def test_a_bare_particle_nothing_backs_gives_way_to_the_passages_rule() -> None:
    """ "不会。" to "消费不够的话会从金卡直接降到普通访客吗？": no clause aligns with the
    question well enough to say what it answers, so it is not shown (a "会。" there was
    false); with the other sentence dropped too, the passage's own rule goes out."""
    from chatbot.answerers.reply_guards import EntailmentGuard

    question = "消费不够的话会从金卡直接降到普通访客吗？"
    extract = passage_extract(question, [MEMBERSHIP_ZH], max_chars=320)
    guard = EntailmentGuard(
        question=question, passages=[MEMBERSHIP_ZH], extract=extract, dont_know="DONT_KNOW"
    )
    guard.feed("不会。会在1月1日降两级。", {})
    assert await guard.drain() == ""
    assert await guard.finish("") is None
    assert guard.verdict.label == "extract" and guard.verdict.replacement == extract
    assert "每次最多只降一级" in extract


async def test_a_sentence_opening_on_a_pronoun_is_shown_only_after_its_antecedent() -> None:
    """ "how am i supposed to clean my sneakers, any tips?": the reader's "It is the only
    washing and cleaning advice we give." passed the check alone, and the shopper never
    learnt what "it" was (the care label). Not shown without the sentence before it; the
    passage's own sentences go out instead. After a shown sentence it stands."""
    question = "how am i supposed to clean my sneakers, any tips?"
    passage = (
        "Follow the care label sewn into each item; it is the only washing and cleaning "
        "advice we give. We do not publish our own washing instructions."
    )
    from chatbot.answerers.reply_guards import EntailmentGuard

    extract = passage_extract(question, [passage], max_chars=320)
    guard = EntailmentGuard(
        question=question, passages=[passage], extract=extract, dont_know="DONT_KNOW"
    )
    guard.feed("It is the only washing and cleaning advice we give.", {})
    assert await guard.drain() == ""
    assert await guard.finish("") is None
    assert guard.verdict.label == "extract" and "care label" in (guard.verdict.replacement or "")
    shown = await _guarded(
        "Follow the care label sewn into each item. It is the only washing and cleaning "
        "advice we give.",
        question=question,
        passages=[passage],
        extract=extract,
    )
    assert shown.startswith("Follow the care label") and "It is the only" in shown


async def test_an_answer_that_passes_whole_gets_nothing_added() -> None:
    passage = "Gift wrapping costs $4.99 per item. Gold members get it free."
    shown = await _guarded(
        "Gift wrapping costs $4.99 per item.",
        question="how much is gift wrap?",
        passages=[passage],
        extract="Gift wrapping costs $4.99 per item.",
    )
    assert shown == "Gift wrapping costs $4.99 per item."


async def test_after_a_dropped_sentence_only_what_was_not_said_is_added() -> None:
    """The reader's second sentence passed and its first was dropped: the shopper got
    the PIN alternative without the reset code the question needed."""
    passage = (
        "如果无法使用两步验证设备，我们会把重置码发送到账户绑定的邮箱。"
        "无法提供该邮箱时，可以改用PIN码或安全问题验证身份。"
    )
    shown = await _guarded(
        "我们会打电话给您。可以改用PIN码或安全问题验证身份。",
        question="手机丢了，两步验证用不了怎么办",
        passages=[passage],
        extract=passage,
    )
    assert "打电话" not in shown
    assert "重置码发送到账户绑定的邮箱" in shown
    # What the reader already said is not repeated.
    assert shown.count("PIN码") == 1


async def test_a_reader_that_says_it_doesnt_know_gives_way_to_the_passages_sentences() -> None:
    """Planning found a passage holding what the question asks, and the small reader
    still said it doesn't know: the passage's own sentences go out (label "extract").
    With no extract to send, the don't-know reply, as before."""
    from chatbot.answerers.reply_guards import EntailmentGuard

    passage = "Gift wrapping costs $4.99 per item. Gold members get it free."
    for extract, shown, label in (
        ("Gift wrapping costs $4.99 per item.", "Gift wrapping costs $4.99 per item.", "extract"),
        ("", "DONT_KNOW", "abstained"),
    ):
        guard = EntailmentGuard(
            question="what does wrapping a present cost?",
            passages=[passage],
            extract=extract,
            dont_know="DONT_KNOW",
        )
        guard.feed("I don't know the price of gift wrapping.", {})
        assert await guard.drain() == ""
        assert await guard.finish("") is None
        assert (guard.verdict.replacement, guard.verdict.label) == (shown, label)


def test_the_extract_keeps_a_rules_exception() -> None:
    """The exception shares no word with the question (皮革 / 皮夹克), but the rule
    without it says leather jackets are repaired free."""
    repairs = "夹克的拉链、接缝和纽扣在购买后2年内免费维修。皮革商品例外：我们不维修皮革制品。"
    extract = passage_extract("两年内什么都免费修，皮夹克也行吧？", [repairs], max_chars=40)
    assert extract == repairs
    en = (
        "Zips and seams are repaired free for 2 years. Leather goods are the exception: "
        "we do not repair leather. Our workshop is in Leeds."
    )
    assert passage_extract("are repairs free for two years?", [en], max_chars=300) == (
        "Zips and seams are repaired free for 2 years. Leather goods are the exception: "
        "we do not repair leather."
    )
    # A negated rule right after the quoted sentence is its limit: the passage calls the
    # shopper's 扣子 纽扣, so "纽扣不能更换。" shares no word with the question.
    buttons = "黑色衬衫配黑色纽扣。纽扣不能更换。衬衫有S、M、L三个尺码。"
    assert passage_extract("衬衫的扣子可以换吗？", [buttons], max_chars=20) == (
        "黑色衬衫配黑色纽扣。纽扣不能更换。"
    )


def test_in_chinese_the_passage_sharing_the_questions_characters_goes_first() -> None:
    """纯棉 is in neither passage; only the material section has 棉."""
    sizes = _passage(1, "尺码与库存 > 服装尺码", "T恤有S到XXL码。", title="尺码与库存")
    material = _passage(
        2, "洗涤与选项 > T恤的材质和款式", "T恤可选棉或涤纶材质。", title="洗涤与选项"
    )
    assert coverage_first("T恤是纯棉的吗", [sizes, material]) == [material, sizes]
    # English questions keep rank order among equals.
    assert coverage_first("what is it", [sizes, material]) == [sizes, material]


def test_the_extract_ignores_character_pairs_that_span_a_particle() -> None:
    """ "T恤有纯棉的吗" made the pair 恤有, which "T恤有S到XXL码" also has: the sizes
    sentence outscored the T-shirt's material, which coverage_first had put first."""
    material = "T恤可选棉或涤纶材质，有圆领和V领两种款式。"
    sizes = "T恤有S到XXL码，抓绒夹克有XS到XL码。"
    extract = passage_extract("T恤有纯棉的吗？", [material, sizes], max_chars=200)
    assert extract == material


async def test_a_price_written_with_a_space_after_its_point_is_one_price() -> None:
    """The reader wrote "$14. 99" (its digits are separate tokens): the guard cut a
    sentence at "$14.", dropped it as a wrong figure, and showed "99 and takes 1 to 2
    business days." Now the price is joined and the sentence judged whole."""
    passage = "Express shipping costs $14.99 and takes 1 to 2 business days."
    for step in (1, 3, 5):
        from chatbot.answerers.reply_guards import EntailmentGuard

        guard = EntailmentGuard(
            question="how much is express shipping?",
            passages=[passage],
            extract="EXTRACT",
            dont_know="DONT_KNOW",
        )
        text = "Express shipping costs $14. 99 and takes 1 to 2 business days."
        shown = ""
        for i in range(0, len(text), step):
            guard.feed(text[i : i + step], {})
            shown += await guard.drain()
        shown += await guard.finish(shown) or ""
        assert shown == passage, step


async def test_an_answer_that_only_says_the_question_back_is_followed_by_the_rule() -> None:
    """ "我是金卡，退货才寄出去两天，退款能马上给吗" got "退款能马上给。" (passed: the passage
    says 马上), which tells the shopper nothing the question didn't; the passage's rule
    (Gold gets it right away either way) follows it. An answer with words of its own
    gets nothing added."""
    from knowledge import entail

    passage = (
        "如果您退货已超过7天仍未收到退款，请联系我们，我们会马上补发。"
        "7天以内请再等等，仓库可能还在处理；金卡会员无论几天都可以马上拿到退款。"
    )
    question = "我是金卡，退货才寄出去两天，退款能马上给吗"
    # The extract L2's plan made for it (the 14:18 probe4 run).
    extract = (
        "如果您退货已超过7天仍未收到退款，请联系我们，我们会马上补发。"
        "金卡会员无论几天都可以马上拿到退款。"
    )
    shown = await _guarded("退款能马上给。", question=question, passages=[passage], extract=extract)
    assert shown.startswith("退款能马上给。") and "无论几天" in shown
    assert entail.echoes("Yes, gift cards expire.", "do gift cards expire?")
    assert not entail.echoes("Gift cards expire after 36 months.", "do gift cards expire?")
    assert not entail.echoes("Gold members get it free.", "how much is gift wrap?")
