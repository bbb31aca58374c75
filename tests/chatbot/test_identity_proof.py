"""Issue #18 item 1: knowing a shopper's email is not enough to change their orders.

The dialogue runs on the real demo shop; the one-time code travels through Django's
email framework (the locmem backend in tests: ``mailoutbox``), and the attempt lock
lives in the real Redis cache under this test's own prefix (``isolated_state``)."""

from __future__ import annotations

import re
import time
from typing import Any

import jwt
import pytest

from chatbot.answerers.base import AnswerPlan
from chatbot.dialogue import Dialogue, TurnContext
from chatbot.orders.identity import ShopperTokenError, shopper_jwt_issue, shopper_token_verify
from chatbot.orders.models import Customer, Order

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("isolated_state")]


@pytest.fixture(autouse=True)
def identity_reads(settings: Any) -> None:
    """Most cases are of a shop that lets a typed email READ orders
    (TIERDESK_CHAT_IDENTITY_READS, off by default): even then it never changes one."""
    settings.TIERDESK_CHAT_IDENTITY_READS = True


MEI = "mei_patel_7272"  # owns #W9583042 (pending)
PENDING = "#W9583042"


class Chatter:
    """One anonymous conversation: its state carries over from turn to turn, and it
    is bound to a customer the way ``services.turn_plan`` binds it."""

    def __init__(self, identity: str = "", customer_id: str = "") -> None:
        self.state: dict[str, Any] = {}
        self.customer_id = customer_id
        self.identity = identity

    def say(self, text: str) -> AnswerPlan:
        ctx = TurnContext(
            text=text,
            language="en",
            state=self.state,
            customer_id=self.customer_id,
            identity=self.identity,
            history=[],
        )
        plan = Dialogue(ctx).plan()
        if ctx.verified is not None:
            self.customer_id = ctx.verified.customer_id
            self.identity = ctx.verified_method
        return plan


def mei_email() -> str:
    return str(Customer.objects.get(customer_id=MEI).email)


def code_from(mail: Any) -> str:
    match = re.search(r"\b(\d{6})\b", mail.body)
    assert match is not None
    return match.group(1)


def cancel_by_email(chatter: Chatter) -> AnswerPlan:
    chatter.say(f"please cancel order {PENDING}, I ordered it by mistake")
    confirm = chatter.say(f"my email is {mei_email()}")
    if confirm.actions != ["confirm"]:  # the store policy asks for the reason first
        confirm = chatter.say("I ordered it by mistake")
    assert confirm.actions == ["confirm"], confirm.text
    return chatter.say("yes")


def status() -> str:
    return str(Order.objects.get(order_id=PENDING).status)


def test_email_alone_cannot_cancel_but_the_emailed_code_can(
    seeded_shop: None, mailoutbox: list[Any]
) -> None:
    chatter = Chatter()
    asked = cancel_by_email(chatter)
    assert status() == "pending"
    assert not any(a.startswith("performed") for a in asked.actions)
    # The code went to the shopper's own address; the chat shows it masked.
    assert len(mailoutbox) == 1 and mailoutbox[0].to == [mei_email()]
    masked = mei_email()[0] + "***@" + mei_email().split("@")[1]
    assert f"6-digit code to {masked}" in asked.text and mei_email() not in asked.text
    # The code is stored hashed, never as typed.
    assert code_from(mailoutbox[0]) not in str(chatter.state)
    # A guess does nothing but use up an attempt.
    guess = "000000" if code_from(mailoutbox[0]) != "000000" else "111111"
    assert "isn't right" in chatter.say(guess).text
    assert status() == "pending"
    done = chatter.say(f"the code is {code_from(mailoutbox[0])}")
    assert done.actions == ["performed:cancel"] and status() == "cancelled"


def test_five_wrong_codes_lock_the_customer(seeded_shop: None, mailoutbox: list[Any]) -> None:
    chatter = Chatter()
    cancel_by_email(chatter)
    code = code_from(mailoutbox[0])
    wrong = f"{(int(code) + 1) % 10**6:06d}"
    for left in (4, 3, 2, 1):
        assert f"({left} attempts left)" in chatter.say(wrong).text
    assert "Too many wrong codes" in chatter.say(wrong).text
    # The right code no longer works: it was dropped with the fifth wrong try.
    chatter.say(code)
    assert status() == "pending"
    # A fresh conversation buys no new attempts: the customer is locked, no mail is sent.
    again = cancel_by_email(Chatter())
    assert "Too many wrong codes" in again.text and len(mailoutbox) == 1
    assert status() == "pending"


def test_an_expired_code_does_nothing(
    seeded_shop: None, mailoutbox: list[Any], settings: Any
) -> None:
    chatter = Chatter()
    cancel_by_email(chatter)
    chatter.state["verify_code"]["expires"] = time.time() - 1
    assert "expired" in chatter.say(code_from(mailoutbox[0])).text
    assert status() == "pending"


def test_a_signed_token_needs_no_code(seeded_shop: None, mailoutbox: list[Any]) -> None:
    chatter = Chatter(identity="token", customer_id=MEI)
    assert chatter.say(f"cancel {PENDING}, ordered by mistake").actions == ["confirm"]
    assert chatter.say("yes").actions == ["performed:cancel"] and mailoutbox == []


def test_token_only_shops_never_change_orders_for_a_typed_email(
    seeded_shop: None, mailoutbox: list[Any], settings: Any
) -> None:
    settings.TIERDESK_ORDER_CHANGE_PROOF = "token"
    plan = cancel_by_email(Chatter())
    assert "signed in" in plan.text and mailoutbox == [] and status() == "pending"


def test_by_default_the_code_comes_before_reading_orders(
    seeded_shop: None, mailoutbox: list[Any]
) -> None:
    from django.conf import settings

    from config.settings import chatbot as shipped

    assert shipped.TIERDESK_CHAT_IDENTITY_READS is False  # the shipped default
    settings.TIERDESK_CHAT_IDENTITY_READS = shipped.TIERDESK_CHAT_IDENTITY_READS
    chatter = Chatter()
    chatter.say(f"where is my order {PENDING}?")
    asked = chatter.say(f"it's {mei_email()}")
    assert "6-digit code" in asked.text and PENDING not in asked.text
    assert chatter.customer_id == ""  # not bound to Mei before the code
    answer = chatter.say(code_from(mailoutbox[0]))
    assert chatter.customer_id == MEI
    assert answer.intent == "order_status" and PENDING in answer.text


KEYS = {"2026-12": "a-long-random-secret-for-the-test-0123456789"}


def test_jwt_shopper_tokens(settings: Any) -> None:
    settings.TIERDESK_SHOPPER_JWT_KEYS = KEYS
    claims = shopper_token_verify(token=shopper_jwt_issue(customer_id=MEI, kid="2026-12", vip=True))
    assert (claims.customer_id, claims.vip) == (MEI, True)
    expired = shopper_jwt_issue(customer_id=MEI, kid="2026-12", ttl_s=-10)
    unknown_kid = jwt.encode(
        {"sub": MEI, "exp": int(time.time()) + 60}, KEYS["2026-12"], headers={"kid": "old"}
    )
    other_key = jwt.encode(
        {"sub": MEI, "exp": int(time.time()) + 60}, "not-the-key", headers={"kid": "2026-12"}
    )
    no_exp = jwt.encode({"sub": MEI}, KEYS["2026-12"], headers={"kid": "2026-12"})
    unsigned = jwt.encode({"sub": MEI, "exp": int(time.time()) + 60}, "", algorithm="none")
    for token, reason in (
        (expired, "expired"),
        (unknown_kid, "forged"),
        (other_key, "forged"),
        (no_exp, "malformed"),
        (unsigned, "malformed"),
    ):
        with pytest.raises(ShopperTokenError) as info:
            shopper_token_verify(token=token)
        assert info.value.reason == reason, token


def change_address_confirmation(chatter: Chatter) -> AnswerPlan:
    chatter.say(f"please change the shipping address of order {PENDING}")
    if not chatter.customer_id:
        chatter.say(f"my email is {mei_email()}")
    confirm = chatter.say("12 Main St, Austin, TX 78701")
    assert confirm.actions == ["confirm"], confirm.text
    return confirm


def test_the_address_confirmation_hides_the_address_on_file_until_proof(
    seeded_shop: None, mailoutbox: list[Any]
) -> None:
    on_file = Order.objects.get(order_id=PENDING).address
    street = str(on_file["address1"] if isinstance(on_file, dict) else on_file)
    # Known only by a typed email: the new address is echoed, the one on file is not.
    weak = change_address_confirmation(Chatter())
    assert "12 Main St" in weak.text and "the address on file" in weak.text
    assert street not in weak.text
    # Signed in by the shop: the confirmation may name the address it replaces.
    strong = change_address_confirmation(Chatter(identity="token", customer_id=MEI))
    assert street in strong.text and "the address on file" not in strong.text
