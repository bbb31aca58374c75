"""spaCy prompt compression (docs/product.md, "Prompt compression (L1)"): facts survive, the key
instruction goes first, L1 questions fit in 80 characters."""

from __future__ import annotations

import re
import threading

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from inference import compress
from inference.compress import prompt_compress
from inference.fact_spans import protected_spans
from inference.prompts import (
    L1_COMPRESSED_MAX_CHARS,
    _question_from_example,
    l1_prompt,
    l1_question_compressed,
)


def test_spec_example_chinese() -> None:
    text = "请用亲切友好的语气，告诉用户他的订单预计明天下午送达，快递公司是顺丰，单号SF123456789"
    assert prompt_compress(text, language="zh").text == "订单明天下午送达，顺丰，SF123456789"


def test_english_drops_politeness_tone_and_framing() -> None:
    text = (
        "Please reply to the customer in a warm and friendly tone, and tell them that your "
        "order #W2611340 has shipped with FedEx, tracking number 357962501027. It should "
        "arrive by Oct 7, 2026."
    )
    out = prompt_compress(text, language="en")
    assert out.text == "order #W2611340 shipped FedEx, tracking 357962501027. arrive by Oct 7, 2026"
    assert out.ratio < 0.45 and out.original_chars == len(text)


def test_negation_survives() -> None:
    out = prompt_compress("Your order #W3043531 is pending: it hasn't shipped yet.", language="en")
    assert "not shipped" in out.text and "#W3043531" in out.text


@pytest.mark.parametrize(
    ("text", "language", "first"),
    [
        (
            "The parcel is running late. Please kindly apologise to the customer for the "
            "delay and say that order #W1234567 arrives on Friday with UPS.",
            "en",
            "apologise",
        ),
        ("订单#W1234567已经发货了，请先向用户真诚地道歉。", "zh", "道歉"),
    ],
)
def test_key_instruction_comes_first(text: str, language: str, first: str) -> None:
    out = prompt_compress(text, language=language).text
    assert out.startswith(first), out
    assert "#W1234567" in out


def test_same_text_compresses_identically() -> None:
    # The few-shot example must stay byte-identical to stay in the prompt cache.
    text = "您的订单#W2611340已发货，承运商FedEx，运单号357962501027，预计2026年10月7日送达。"
    assert prompt_compress(text, language="zh").text == prompt_compress(text, language="zh").text


def test_pipelines_load_once_and_are_shared_between_threads() -> None:
    compress.compress_warm_up()
    pipelines = dict(compress._pipelines)
    results: list[str] = []

    def work(i: int) -> None:
        results.append(
            prompt_compress(f"Tell them order #W{1000000 + i} shipped.", language="en").text
        )

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(results) == 4 and all("#W100000" in r for r in results)
    assert compress._pipelines == pipelines  # nothing was loaded again


# --- properties: every id, number, date and named entity survives ---------------------

_ids = st.builds(lambda n: f"#W{n}", st.integers(1_000_000, 9_999_999))
_tracking = st.builds(str, st.integers(10**11, 10**12 - 1))
_amounts = st.builds(lambda d, c: f"${d}.{c:02d}", st.integers(1, 9999), st.integers(0, 99))
_counts = st.builds(str, st.integers(1, 60))
_months = st.sampled_from(
    ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
)
_en_dates = st.builds(
    lambda m, d, y: f"{m} {d}, {y}", _months, st.integers(1, 28), st.integers(2024, 2030)
)
_zh_dates = st.builds(
    lambda y, m, d: f"{y}年{m}月{d}日",
    st.integers(2024, 2030),
    st.integers(1, 12),
    st.integers(1, 28),
)
_carriers = st.sampled_from(["UPS", "FedEx", "USPS", "DHL", "SF Express", "顺丰"])
_emails = st.builds(
    lambda a, b: f"{a}.{b}@example.com",
    st.sampled_from(["james", "mei", "ana", "li"]),
    st.integers(1, 9999),
)

_EN_PARTS = [
    "Please let the customer know that order {id} was shipped with {carrier}.",
    "Kindly tell them the tracking number is {tracking}.",
    "It should arrive by {date}, hopefully.",
    "The total was {amount} for {count} items.",
    "Politely explain that a refund of {amount} was issued to {email}.",
    "In a warm and very friendly tone, say the package will arrive on {date}.",
    "Apologise for the really long delay.",
    "Their order {id} has not shipped yet.",
]
_ZH_PARTS = [
    "请用亲切友好的语气告诉用户订单{id}已由{carrier}发出",
    "运单号是{tracking}",
    "预计{date}送达",
    "合计{amount}，共{count}件商品",
    "退款{amount}已经退回到{email}",
    "麻烦告诉他订单{id}尚未发货",
    "请向用户道歉",
]


@st.composite
def _prompt(draw: st.DrawFn, language: str) -> tuple[str, list[str]]:
    parts = _ZH_PARTS if language == "zh" else _EN_PARTS
    chosen = draw(st.lists(st.sampled_from(parts), min_size=1, max_size=4, unique=True))
    facts = {
        "id": draw(_ids),
        "tracking": draw(_tracking),
        "amount": draw(_amounts),
        "count": draw(_counts),
        "date": draw(_zh_dates if language == "zh" else _en_dates),
        "carrier": draw(_carriers),
        "email": draw(_emails),
    }
    sep = "，" if language == "zh" else " "
    text = sep.join(part.format(**facts) for part in chosen)
    used = [v for k, v in facts.items() if any("{" + k + "}" in part for part in chosen)]
    return text, used


_settings = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_settings
@given(_prompt("en"))
def test_property_english_facts_survive(case: tuple[str, list[str]]) -> None:
    text, facts = case
    out = prompt_compress(text, language="en").text
    for fact in facts:
        assert fact in out, (fact, text, out)
    assert len(out) < len(text)


@_settings
@given(_prompt("zh"))
def test_property_chinese_facts_survive(case: tuple[str, list[str]]) -> None:
    text, facts = case
    out = prompt_compress(text, language="zh").text
    for fact in facts:
        assert fact in out, (fact, text, out)
    assert len(out) <= len(text)


@_settings
@given(st.text(min_size=0, max_size=120))
# Found by hypothesis: the Chinese clause split cut "0:0" at the colon and joined it
# back with "，" (a time like "10:30" became "10，30").
@example("0:0")
@example("10:30前发货，金额1,299.00")
def test_property_any_text_keeps_every_protected_span(text: str) -> None:
    # Whatever the input, no id/number/date/amount the regexes see is lost or changed.
    for language in ("en", "zh"):
        out = prompt_compress(text, language=language).text
        for start, end in protected_spans(text):
            span = re.sub(r"\s+", " ", text[start:end].strip())
            assert span in re.sub(r"\s+", " ", out), (span, text, out)


@_settings
@given(
    st.lists(
        st.sampled_from(["Paris", "Alex Smith", "Nike", "Amazon", "Tokyo"]),
        min_size=1,
        max_size=2,
        unique=True,
    ),
    _ids,
)
def test_property_named_entities_survive(names: list[str], order_id: str) -> None:
    text = f"Please tell the customer that {' and '.join(names)} confirmed order {order_id} today."
    doc = compress._pipeline("en")(text)
    out = prompt_compress(text, language="en").text
    for ent in doc.ents:  # whatever spaCy recognises as an entity is kept verbatim
        assert ent.text in out, (ent.text, out)
    assert order_id in out


# --- the L1 prompt ------------------------------------------------------------------------


def test_l1_prompt_compressed_keeps_example_and_facts() -> None:
    reply = (
        "Your order #W2611340 has shipped with FedEx, tracking number 357962501027. "
        "It should arrive by Oct 7, 2026."
    )
    example = (
        "Your order #W1234567 has shipped with FedEx, tracking number 784512369014. "
        "It should arrive by Mar 3, 2026."
    )
    prompt = l1_prompt(
        template="",
        keys=["order_id"],
        facts={"order_id": "#W2611340"},
        example_facts={"order_id": "#W1234567"},
        example_reply=example,
        language="en",
        reply=reply,
        compress=True,
    )
    question = prompt.rsplit("Facts: ", 1)[1].removesuffix("\nReply:")
    assert len(question) <= L1_COMPRESSED_MAX_CHARS
    for fact in ("#W2611340", "FedEx", "357962501027", "Oct 7, 2026"):
        assert fact in question
    assert f"Reply: {example}\n\n" in prompt and prompt.endswith("\nReply:")


def test_l1_prompt_falls_back_when_compression_breaks(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(**_: object) -> str:
        raise RuntimeError("pipeline gone")

    monkeypatch.setattr("inference.prompts.l1_question_compressed", broken)
    prompt = l1_prompt(
        template="",
        keys=["order_id"],
        facts={"order_id": "#W2611340"},
        example_facts={"order_id": "#W1234567"},
        example_reply="x",
        language="en",
        reply="Your order #W2611340 shipped.",
        compress=True,
    )
    assert prompt.endswith("Facts: order_id: #W2611340\nReply:")


@pytest.mark.django_db
def test_every_l1_question_of_the_demo_shop_fits_in_80_chars(seeded_shop: None) -> None:
    from chatbot.answerers.order_format import order_facts
    from chatbot.orders.backends import get_order_service
    from chatbot.orders.models import Order
    from routing.templates import template_get, template_render

    service = get_order_service()
    cases = 0
    for order in Order.objects.select_related("customer").order_by("id")[:5]:
        facts = service.order_get(customer_id=order.customer.customer_id, order_id=order.order_id)
        assert facts is not None
        for language in ("en", "zh"):
            values = order_facts(facts, language)
            for intent, key in (
                ("order_status", facts.status),
                ("delivery_time", facts.status),
                ("refund_status", "refunded" if facts.refunds else "none"),
            ):
                reply = template_render(
                    template_get(intent=intent, key=key, language=language), values
                )
                question = l1_question_compressed(reply=reply, language=language)
                cases += 1
                assert len(question) <= L1_COMPRESSED_MAX_CHARS, question
                assert values["order_id"] in question
    assert cases == 30


@pytest.mark.django_db
def test_question_line_from_the_example_equals_compressing_it(seeded_shop: None) -> None:
    """Issue #16: the question's compressed line is the cached example line with the
    facts swapped, when that is exactly what compressing it gives; verified here on the
    demo shop's orders, both languages, against compressing each line itself."""
    from chatbot.answerers.order_format import order_facts, tracking_url
    from chatbot.orders.backends import get_order_service
    from chatbot.orders.models import Order
    from inference.prompts import EXAMPLE_FACTS, l1_question
    from routing.templates import placeholders, template_get, template_render

    service = get_order_service()
    swapped = compared = 0
    for order in Order.objects.select_related("customer").order_by("id")[:8]:
        facts = service.order_get(customer_id=order.customer.customer_id, order_id=order.order_id)
        assert facts is not None
        for language in ("en", "zh"):
            values = order_facts(facts, language)
            base = EXAMPLE_FACTS[language]
            example_facts = base | {
                "status_text": values.get("status_text", ""),
                "late": values.get("late", ""),
                "track_url": tracking_url(base["carrier"], base["tracking"]),
            }
            for intent, key in (
                ("order_status", facts.status),
                ("refund_status", "refunded" if facts.refunds else "none"),
            ):
                template = template_get(intent=intent, key=key, language=language)
                keys = [k for k in placeholders(template) if values.get(k)]
                reply = template_render(template, values)
                example_reply = template_render(template, example_facts)
                line = _question_from_example(
                    l1_question_compressed(reply=example_reply, language=language),
                    example=l1_question(reply=example_reply, language=language),
                    question=l1_question(reply=reply, language=language),
                    swaps=[(example_facts[k], values[k]) for k in keys],
                )
                compared += 1
                if line is not None:
                    swapped += 1
                    assert line == l1_question_compressed(reply=reply, language=language)
    assert compared == 32 and swapped >= compared * 0.75


def test_question_line_is_compressed_itself_when_the_swap_does_not_fit() -> None:
    example = "tell them order #W1234567 ships Mar 3, 2026"
    # A value that occurs twice in the compressed line: which one is the fact?
    assert (
        _question_from_example(
            "#W1234567 #W1234567",
            example="tell them #W1234567",
            question="tell them #W2611340",
            swaps=[("#W1234567", "#W2611340")],
        )
        is None
    )
    # The question differs beyond the swapped facts (a fact only it has), or does not.
    swaps = [("#W1234567", "#W2611340"), ("Mar 3, 2026", "Oct 7, 2026")]
    for question, line in (
        ("tell them order #W2611340 ships Oct 7, 2026 by FedEx", None),
        ("tell them order #W2611340 ships Oct 7, 2026", "order #W2611340 ships Oct 7, 2026"),
    ):
        assert (
            _question_from_example(
                "order #W1234567 ships Mar 3, 2026", example=example, question=question, swaps=swaps
            )
            == line
        )
