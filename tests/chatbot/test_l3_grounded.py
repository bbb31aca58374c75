"""L3 grounded in the shop's records.

- The context holds only this shopper's orders (through ``OrderService``), the
  catalogue rows the question names and the relevant help-article passages.
- The grounded guard drops a sentence with an invented order id, amount, date,
  carrier or refund, strips "As an AI language model" boilerplate, and with nothing
  backed says it can't confirm and offers a person.
- With the real model (the local llama.cpp stand-in for the large tier), the
  backpack-and-refund question end to end: no invented order facts reach the shopper.

The fake model (``tests.fakes.FakeBackend``) is used only where a real model can't be
made to invent a given order id or amount on demand; the tests that use it say so.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from channels.db import database_sync_to_async

from chatbot.answerers.l3_records import LABELS, SUMMARY_LINES, order_facts, shop_context
from chatbot.answerers.reply_guards import GroundedGuard
from chatbot.models import Conversation, Message
from chatbot.orders.backends import get_order_service
from chatbot.orders.models import Customer, Order
from chatbot.orders.types import Address, OrderFacts, OrderItem
from inference import registry
from inference.fact_guard import fact_tokens
from knowledge.text import estimate_tokens
from routing import types as rt
from routing.templates import template_get, template_render
from shop.models import ProductVariant
from tests.servers import remote
from tests.shopper import Shopper

BACKPACK_QUESTION = (
    "Compare your two most expensive backpacks and tell me which is better for hiking, "
    "and also why my last refund took so long"
)
ORDER_ID = re.compile(r"#?W\d{7}")


@pytest.fixture(autouse=True)
def _empty_index() -> Iterator[None]:
    """No test sees another's help articles (the index is per process)."""
    from knowledge import index

    index.reset()
    yield
    index.reset()


def abstain_text() -> str:
    return template_get(intent="dialogue", key="l3_abstain", language="en")


def records_text(records: str) -> str:
    """The abstain reply that first says what the records plainly show."""
    template = template_get(intent="dialogue", key="l3_records", language="en")
    return template_render(template, {"records": records})


def shopper_without_refunds() -> tuple[str, list[str]]:
    """A shopper with at least two orders and no refund on any: their id and orders."""
    service = get_order_service()
    for customer in Customer.objects.order_by("customer_id"):
        orders = service.orders_for_customer(customer_id=customer.customer_id)
        if len(orders) >= 2 and not any(o.refunds for o in orders):
            return customer.customer_id, [o.order_id for o in orders]
    raise AssertionError("the demo shop has no shopper without refunds")


def force_l3(monkeypatch: Any) -> None:
    """Every message goes to the L3 answerer (the router is not under test here)."""
    decision = rt.RouteDecision(
        tier=rt.L3,
        intent=rt.COMPLEX_QUESTION,
        confidence=1.0,
        slots={},
        reason={"kind": "test", "forced": rt.L3},
    )
    monkeypatch.setattr("chatbot.dialogue.route_message", lambda **_: decision)


# -- the context ------------------------------------------------------------------------


@pytest.mark.django_db
def test_context_is_this_shoppers_orders_the_named_products_and_kb_passages(
    seeded_shop: None, settings: Any
) -> None:
    from knowledge import index
    from knowledge.seed import knowledge_seed

    settings.TIERDESK_KB_SUMMARY_ROLE = ""
    settings.TIERDESK_KB_REFRESH_S = 0.0
    index.reset()
    knowledge_seed(ingest_now=True, keys=["en-boots-faq"])
    mine, my_orders = shopper_without_refunds()
    others = set(
        Order.objects.exclude(customer__customer_id=mine).values_list("order_id", flat=True)
    )
    question = "Are the boots waterproof, and where is my order?"

    ctx = shop_context(
        question=question, language="en", customer_id=mine, service=get_order_service()
    )
    text = ctx.text()
    shown_ids = set(ORDER_ID.findall(text))
    assert shown_ids and shown_ids <= set(my_orders)
    assert not shown_ids & others
    assert ctx.personal and ctx.explain["orders"] == len(my_orders)
    # The catalogue rows of the product the question names, and nothing else.
    assert ctx.catalogue_lines and all("Hiking Boots" in line for line in ctx.catalogue_lines)
    # The help article's passage about waterproof boots, cited.
    assert any("Boots FAQ" in p and "waterproof" in p for p in ctx.kb_passages)
    assert [c["title"] for c in ctx.citations] == ["Boots FAQ"] * len(ctx.citations)
    assert estimate_tokens(text) <= settings.TIERDESK_L3_CONTEXT_TOKENS + 40  # + labels

    # Anonymous: the same question reads no order at all.
    anon = shop_context(
        question=question, language="en", customer_id="", service=get_order_service()
    )
    assert anon.order_lines == [LABELS["en"]["anonymous"]]
    assert not ORDER_ID.search(anon.text()) and not anon.personal
    # A question that is not about orders doesn't read them either.
    boots = shop_context(
        question="Are the boots waterproof?",
        language="en",
        customer_id=mine,
        service=get_order_service(),
    )
    assert boots.order_lines == [] and not boots.personal and boots.catalogue_lines


@pytest.mark.django_db
def test_backpack_question_gets_the_dearest_backpacks_and_no_refund_on_record(
    seeded_shop: None,
) -> None:
    mine, _ = shopper_without_refunds()
    ctx = shop_context(
        question=BACKPACK_QUESTION, language="en", customer_id=mine, service=get_order_service()
    )
    prices = sorted(
        ProductVariant.objects.filter(product__name="Backpack").values_list("price", flat=True),
        reverse=True,
    )
    assert (
        ctx.catalogue_lines[0].startswith("1. Backpack")
        and f"${prices[0]}" in ctx.catalogue_lines[0]
    )
    assert (
        ctx.catalogue_lines[1].startswith("2. Backpack")
        and f"${prices[1]}" in ctx.catalogue_lines[1]
    )
    assert LABELS["en"]["no_refunds"] in ctx.order_lines
    # What the abstain reply would say: no refund, and the two dearest backpacks.
    extract = ctx.extract()
    assert extract.startswith(LABELS["en"]["no_refunds"])
    assert f"${prices[0]}" in extract and f"${prices[1]}" in extract
    assert f"${prices[2]}" not in extract
    # Cheapest first when that is what is asked.
    cheap = shop_context(
        question="what is your cheapest backpack?",
        language="en",
        customer_id="",
        service=get_order_service(),
    )
    assert f"${prices[-1]}" in cheap.catalogue_lines[0]


# -- the guard --------------------------------------------------------------------------

RECORDS = [
    "There is no refund on record for any of your orders.",
    *order_facts(
        OrderFacts(
            order_id="#W2611340",
            status="delivered",
            items=(
                OrderItem(
                    item_id="1",
                    name="Backpack",
                    price=Decimal("198.00"),
                    options={"color": "black", "size": "large"},
                ),
            ),
            total=Decimal("198.00"),
            address=Address("1 Main St", "", "Austin", "TX", "78701"),
            placed_on=date(2026, 10, 1),
            estimated_delivery=date(2026, 10, 7),
            carrier="USPS",
            tracking_ids=("739892591834",),
            refunds=(),
            payment_method="credit_card",
        ),
        currency="$",
    ),
    "1. Backpack, item 8084436579, color navy, size large, material polyester, compartment "
    "laptop, price $219.43, available.",
]


async def guarded(
    text: str, records: list[str] = RECORDS, question: str = "q"
) -> tuple[str | None, GroundedGuard]:
    """Feed ``text`` through the guard as a stream would (a few characters at a time)."""
    guard = GroundedGuard(
        question=question, passages=records, abstain="ABSTAIN", bare=SUMMARY_LINES
    )
    shown = ""
    for i in range(0, len(text), 7):
        assert guard.feed(text[i : i + 7], {}) == ""
        shown += await guard.drain()
    tail = await guard.finish(shown)
    return (None if tail is None else shown + tail), guard


async def test_guard_drops_invented_order_facts_and_boilerplate() -> None:
    reply = (
        "Your order #W2611340 was delivered on Oct 7, 2026. "
        "As an AI language model, I cannot feel how long a refund takes. "
        "Your order #W9999999 is on its way. "  # an order id not in the records
        "The order total was $250.00. "  # an amount not in the records
        "Your refund of $198.00 was issued on Oct 9, 2026. "  # a refund and a date invented
        "It was shipped with FedEx. "  # the carrier was USPS
        "The navy Backpack item 8084436579 costs $219.43. "
        "Happy to help!"
    )
    shown, guard = await guarded(reply)
    assert shown == (
        "Your order #W2611340 was delivered on Oct 7, 2026. "
        "The navy Backpack item 8084436579 costs $219.43. Happy to help!"
    )
    dropped = {d["label"] for d in guard.verdict.meta["unsupported_claims"]}
    assert "invented_fact" in dropped and "boilerplate" in dropped
    assert guard.verdict.label == "trimmed"


async def test_a_price_split_across_chunks_is_one_sentence() -> None:
    """A chunk ending in "$219." is not a sentence end: "43" may follow."""
    guard = GroundedGuard(question="q", passages=RECORDS, abstain="ABSTAIN")
    shown = ""
    for piece in ("The navy Backpack costs $219.", "43. Your order #W2611340", " ships with USPS."):
        guard.feed(piece, {})
        shown += await guard.drain()
    shown += await guard.finish(shown) or ""
    assert shown == "The navy Backpack costs $219.43. Your order #W2611340 ships with USPS."


async def test_a_reply_cut_inside_a_figure_drops_its_last_piece() -> None:
    """make eval-answers, 2026-12-03: the model's token limit ended an L3 reply on
    "..., price $2" (the row's price is $219.43) and the shopper read "$2". A stream
    that stops on a figure with no sentence end was cut inside it."""
    shown, guard = await guarded(
        "The navy Backpack item 8084436579 costs $219.43. The navy Backpack item "
        "8084436579 is large, price $2"
    )
    assert shown == "The navy Backpack item 8084436579 costs $219.43."
    cut = [d for d in guard.verdict.meta["unsupported_claims"] if d["label"] == "cut"]
    assert cut and cut[0]["text"].endswith("price $2")
    # A last sentence that ends is kept, figure and all.
    shown, _ = await guarded("The navy Backpack item 8084436579 costs $219.43.")
    assert shown == "The navy Backpack item 8084436579 costs $219.43."


async def test_guard_drops_a_flipped_status_and_a_refund_cause() -> None:
    # No digits in these: the entailment check against the records catches them.
    shown, guard = await guarded(
        "Your order was cancelled. Your refund took long because the bank was slow."
    )
    assert shown is None and guard.verdict.label == "abstained"
    assert guard.verdict.replacement == "ABSTAIN"
    # "No refund on record" is backed, so it stands.
    shown, _ = await guarded("There is no refund on record for your orders.")
    assert shown == "There is no refund on record for your orders."


async def test_guard_with_only_boilerplate_or_dont_know_abstains() -> None:
    for reply in (
        "As an AI language model, I don't have access to your orders.",
        "I'm just an AI. I don't know.",
    ):
        shown, guard = await guarded(reply)
        assert shown is None and guard.verdict.label == "abstained", reply
        assert guard.verdict.replacement == "ABSTAIN"


async def test_guard_drops_an_answer_to_nothing_asked_and_a_dangling_pronoun() -> None:
    """The real model once answered the backpack question with only "It is available in
    a large compartment laptop and is priced at $219.43.": backed by a catalogue row,
    and an answer to nothing asked. The first sentence shown must be about the question
    (courtesy waits for an answer), and "It" right after a dropped sentence means what
    the shopper never saw."""
    ci_reply = "It is available in a large compartment laptop and is priced at $219.43."
    for reply in (ci_reply, f"Sure! {ci_reply}"):
        shown, guard = await guarded(reply, question=BACKPACK_QUESTION)
        assert shown is None and guard.verdict.label == "abstained", reply
        labels = {d["label"] for d in guard.verdict.meta["unsupported_claims"]}
        assert "off_topic" in labels, guard.verdict.meta
    # After a sentence on the question, the same sentence stands ("It" is the backpack).
    answer = "The navy Backpack item 8084436579 costs $219.43."
    shown, guard = await guarded(f"{answer} {ci_reply}", question=BACKPACK_QUESTION)
    assert shown == f"{answer} {ci_reply}" and guard.verdict.label == "passed"
    # ... but not right after a dropped one: "It" would be the invented order.
    shown, guard = await guarded(
        f"{answer} Your order #W9999999 is on its way. {ci_reply}", question=BACKPACK_QUESTION
    )
    assert shown == answer
    dropped = [d["label"] for d in guard.verdict.meta["unsupported_claims"]]
    assert dropped == ["invented_fact", "dangling"]
    # A summary of the records answers the refund part, whatever its words.
    shown, _ = await guarded(RECORDS[0], question=BACKPACK_QUESTION)
    assert shown == RECORDS[0]


# -- end to end with the fake model (it must invent on demand) --------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("isolated_state")
async def test_invented_facts_never_reach_the_shopper_and_nothing_backed_offers_a_person(
    seeded_shop: None, fake_models: Any, monkeypatch: Any
) -> None:
    """A fake model: a real one can't be made to invent an order id on demand."""
    force_l3(monkeypatch)
    mine, my_orders = await database_sync_to_async(shopper_without_refunds)()
    order = await database_sync_to_async(get_order_service().order_get)(
        customer_id=mine, order_id=my_orders[0]
    )
    assert order is not None
    large = fake_models["fallback"]  # "large" is an alias of "fallback" in tests
    large.replies = [
        f"As an AI language model, I can compare them. Your order {order.order_id} has "
        f"status {order.status}. Your refund of $77.00 for order #W0000001 was delayed "
        "by the bank.",
        "Your refund of $77.00 was sent on Oct 9, 2026 by FedEx.",
    ]
    shopper = await Shopper.connect()
    try:
        await shopper.identify(mine)
        shown, done = await shopper.ask("why did my last refund take so long, and my order?")
        assert done["tier"] == "L3" and done["guard"] == "trimmed"
        assert shown == f"Your order {order.order_id} has status {order.status}."
        reply = await Message.objects.aget(pk=done["message_id"])
        labels = {d["label"] for d in reply.metadata["unsupported_claims"]}
        assert labels == {"boilerplate", "invented_fact"}
        # The prompt carried this shopper's orders and the no-refund line.
        messages = large.calls[0].messages
        assert messages is not None
        prompt = messages[-1].content
        assert order.order_id in prompt and LABELS["en"]["no_refunds"] in prompt

        shown, done = await shopper.ask("and when was the refund sent?")
        # Nothing backed: what the records plainly say, then the offer of a person.
        assert shown == records_text(LABELS["en"]["no_refunds"])
        assert done["guard"] == "abstained"
        assert "offer:human" in done["actions"]
        conversation = await Conversation.objects.aget(public_id=shopper.hello["conversation"])
        assert "pending_handoff" in conversation.state  # a "yes" now asks for a person
    finally:
        await shopper.close()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("isolated_state")
async def test_no_relevant_records_abstains_without_calling_the_model(
    seeded_shop: None, fake_models: Any, monkeypatch: Any
) -> None:
    force_l3(monkeypatch)
    shopper = await Shopper.connect()
    try:
        shown, done = await shopper.ask("What do you think about the meaning of life?")
    finally:
        await shopper.close()
    assert shown == abstain_text() and done["actions"] == ["offer:human"]
    assert fake_models["fallback"].calls == []


# -- end to end with the real model -------------------------------------------------------


@pytest.mark.models
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("isolated_state")
async def test_backpack_and_refund_question_invents_no_order_facts(
    seeded_shop: None, l3_url: str, fallback_model: Any, settings: Any, monkeypatch: Any
) -> None:
    settings.TIERDESK_L3_FIRST_TOKEN_TIMEOUT_MS = 120000  # the L3 answer itself, not a fallback
    settings.TIERDESK_L3_MAX_TOKENS = 80
    # A long read timeout: prefilling the records takes a while on a busy 2-core machine,
    # and the answer under test is the large model's, not the fallback's.
    backend = remote(l3_url, read_timeout_s=300)
    registry.register("large", backend)
    force_l3(monkeypatch)
    mine, my_orders = await database_sync_to_async(shopper_without_refunds)()
    records = await database_sync_to_async(
        lambda: shop_context(
            question=BACKPACK_QUESTION,
            language="en",
            customer_id=mine,
            service=get_order_service(),
        ).text()
    )()
    shopper = await Shopper.connect()
    try:
        await shopper.identify(mine)
        shown, done = await shopper.ask(BACKPACK_QUESTION, wait_s=600, turn_errors_only=True)
    finally:
        await shopper.close()
        registry.unregister("large")
        backend.close()
    assert done["type"] == "done" and done["tier"] == "L3" and shown.strip(), done
    stored = await Message.objects.aget(pk=done["message_id"])
    print(f"\nL3 backpack answer ({done['guard']}): {shown}")
    print("dropped:", stored.metadata.get("unsupported_claims"))
    assert "language model" not in shown.lower() and "as an ai" not in shown.lower()
    # No order id but this shopper's, and every id, amount and date is in the records.
    assert set(ORDER_ID.findall(shown)) <= set(my_orders)
    assert fact_tokens(shown) <= fact_tokens(records) | {
        p for t in fact_tokens(records) for p in re.split(r"[.\-/:]", t) if p
    }
    if done["guard"] == "abstained":
        # What the records plainly say: no refund, the two dearest backpacks; a person.
        assert shown.startswith(records_text("")[:20]) and "offer:human" in done["actions"]
        assert LABELS["en"]["no_refunds"] in shown and shown.count("Backpack (") == 2
    else:
        # What went out names the catalogue's backpacks or the (absent) refund.
        assert "backpack" in shown.lower() or "refund" in shown.lower()


PICKUP_ARTICLE = """# Store pickup

## Who can collect an order

Someone else can collect your pickup order if they bring the order confirmation email and
their own photo ID.

## How long we hold your order

We hold a pickup order for 7 days, then it is cancelled and refunded.
"""


@pytest.mark.django_db
def test_anonymous_rule_question_gets_the_articles_own_sentences_in_the_extract(
    seeded_shop: None, settings: Any
) -> None:
    """Nobody signed in, a rule question about "this" purchase: what the records show
    (not signed in) and the article's sentences on the question, word for word, for
    the reply the model couldn't back. An unrelated article is never quoted."""
    from tests.kb import approved_article

    approved_article(settings, title="Store pickup", text=PICKUP_ARTICLE)
    ctx = shop_context(
        question="I'm a guest, can my husband collect my pickup order for me?",
        language="en",
        customer_id="",
        service=get_order_service(),
    )
    extract = ctx.extract()
    assert extract.startswith(LABELS["en"]["anonymous"])
    assert "Someone else can collect your pickup order" in extract
    assert "7 days" not in extract  # the other section's sentence answers another question
    # A question the article doesn't hold: no article sentence at all.
    other = shop_context(
        question="is the leather on your boots ethically sourced?",
        language="en",
        customer_id="",
        service=get_order_service(),
    )
    assert other.kb_extract == "" and "pickup" not in other.extract().lower()


async def test_a_reply_that_only_summarises_the_records_gets_the_articles_rule() -> None:
    """The model only repeated "you are not signed in": the article's sentences on the
    question follow it. A reply that says something of its own is left as it is."""
    from chatbot.answerers.l3_records import SUMMARY_LINES

    anonymous = LABELS["en"]["anonymous"]
    rule = "Someone else can collect your pickup order if they bring their own photo ID."
    records = [anonymous, f"Store pickup: {rule}"]

    async def run(text: str) -> tuple[str | None, GroundedGuard]:
        guard = GroundedGuard(
            question="can my husband collect my pickup order?",
            passages=records,
            abstain="ABSTAIN",
            rule=rule,
            bare=SUMMARY_LINES,
        )
        guard.feed(text, {})
        shown = await guard.drain()
        tail = await guard.finish(shown)
        return (None if tail is None else shown + tail), guard

    shown, guard = await run(anonymous)
    assert shown == f"{anonymous} {rule}" and guard.verdict.meta["rule_added"]
    shown, guard = await run(f"{anonymous} {rule}")
    assert shown == f"{anonymous} {rule}" and "rule_added" not in guard.verdict.meta
