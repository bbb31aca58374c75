from __future__ import annotations

from inference.fact_guard import StreamGuard, guard_check

FACTS = {
    "order_id": "#W2611340",
    "status_text": "shipped",
    "carrier": "UPS",
    "tracking": "357962501027",
    "eta": "Nov 12, 2026",
}
REQUIRED = ["#W2611340", "shipped", "UPS", "357962501027", "Nov 12, 2026"]
TEMPLATE = (
    "Your order #W2611340 has shipped with UPS, tracking number 357962501027. "
    "It should arrive by Nov 12, 2026."
)


def check(text: str) -> tuple[bool, str]:
    verdict = guard_check(text=text, facts=FACTS, required=REQUIRED, template_text=TEMPLATE)
    return verdict.ok, verdict.reason


def test_faithful_rephrasing_passes() -> None:
    ok, _ = check(
        "Good news! Order #W2611340 has shipped with UPS (tracking 357962501027) "
        "and arrives by Nov 12, 2026."
    )
    assert ok


def test_a_garbled_number_fails() -> None:
    ok, reason = check(
        "Order #W2611340 has shipped with UPS, tracking 357962501072, arriving Nov 12, 2026."
    )
    assert not ok and "357962501072" in reason


def test_an_invented_amount_fails() -> None:
    ok, reason = check(
        "Order #W2611340 has shipped with UPS, tracking 357962501027, Nov 12, 2026. You saved $20."
    )
    assert not ok and "$20" in reason


def test_a_wrong_carrier_fails() -> None:
    ok, reason = check(
        "Order #W2611340 has shipped with FedEx, tracking 357962501027 by Nov 12, 2026."
    )
    assert not ok and "FedEx" in reason


def test_a_carrier_is_a_whole_word() -> None:
    """The word "items" holds EMS and "groups" UPS; neither names a carrier. A carrier
    named in a sentence is still found, in either case and beside punctuation."""
    ok, reason = check(
        "Order #W2611340 has shipped with UPS, tracking 357962501027, by Nov 12, 2026. "
        "All items in it ship in groups."
    )
    assert ok, reason
    for text in ("It ships via EMS.", "It ships via ems", "(DHL) ships it", "顺丰发货"):
        ok, reason = check(f"Order #W2611340 shipped with UPS, 357962501027, Nov 12, 2026. {text}")
        assert not ok and "carrier" in reason, text


def test_dropping_a_required_fact_fails() -> None:
    # The reply from ARCHITECTURE.md's measurement: polite, and says nothing.
    ok, reason = check("Thanks for asking! We are tracking your order for you.")
    assert not ok and "missing" in reason


def test_streaming_holds_back_a_growing_token() -> None:
    guard = StreamGuard(facts=FACTS, required=["#W2611340"], template_text="")
    assert guard.feed("Your order #W26") == "Your order "
    assert guard.feed("11340 is") == "#W2611340 "
    assert guard.feed(" on its way.") == "is on its "
    assert guard.finish() == "way."


def test_streaming_stops_at_the_first_bad_token() -> None:
    guard = StreamGuard(facts=FACTS, required=[], template_text="")
    assert guard.feed("Order #W2611341 ") is None
    assert guard.feed("more text") is None
    assert guard.finish() is None
    assert not guard.verdict.ok


def test_chinese_dates_and_ids() -> None:
    facts = {"order_id": "#W2611340", "eta": "2026年11月12日", "status_text": "已发货"}
    ok = guard_check(
        text="您的订单#W2611340已发货，预计2026年11月12日送达。",
        facts=facts,
        required=["#W2611340", "已发货"],
    ).ok
    assert ok
    assert not guard_check(
        text="您的订单#W2611340已发货，预计2026年11月13日送达。",
        facts=facts,
        required=["#W2611340"],
    ).ok


def test_streaming_releases_the_first_word_at_once() -> None:
    """The first word goes out with its own token (not one token later) when it is
    letters only and begins no carrier's name; a carrier's beginning, a single letter
    (an id's prefix: "W" + "2611340") and anything with a digit are still held."""
    guard = StreamGuard(facts=FACTS, required=[], template_text="")
    assert guard.feed(" Your") == " Your"
    assert guard.feed(" order") == " "  # past the first word: held until it ends
    assert guard.feed(" #W26") == "order "
    for first in ("Fed", "U", "W", "W26", "#W"):
        held = StreamGuard(facts=FACTS, required=[], template_text="")
        assert held.feed(first) == "", first
    fedex = StreamGuard(facts=FACTS, required=[], template_text="")
    assert fedex.feed("Fed") == "" and fedex.feed("Ex ships it") is None
    assert "FedEx" in fedex.verdict.reason
