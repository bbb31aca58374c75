"""Every refusal renders to its ``error`` frame (docs/protocol.md) in one place, and
``message_receive`` raises or returns them, each with its stable code and fields."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import OperationalError

from chatbot import receive
from chatbot.botcheck import BotSession
from chatbot.feedback import FeedbackError
from chatbot.orders.identity import ShopperTokenError
from chatbot.protocol import MessageFrame, ProtocolError
from chatbot.refusals import (
    BOT_REFUSALS,
    BotChallenge,
    BotCheckRequired,
    BotRefused,
    IdentityConflict,
    InternalError,
    RateLimited,
    Refusal,
    StoreUnavailable,
    TooManyQueued,
    TurnFailed,
    refusal_frame,
)

CASES: list[tuple[Refusal, dict[str, Any]]] = [
    (
        StoreUnavailable(reply_to="c1"),
        {
            "type": "error",
            "code": "store_unavailable",
            "message": "We couldn't save your message just now; it will be sent again.",
            "reply_to": "c1",
            "retry_after": 2,
        },
    ),
    (
        RateLimited(reply_to="c1", message_id=7, retry_after=3, limit="session"),
        {
            "type": "error",
            "code": "rate_limited",
            "message": "You're sending messages too fast; this one is saved. "
            "Please try again shortly.",
            "reply_to": "c1",
            "message_id": 7,
            "retry_after": 3,
            "limit": "session",
        },
    ),
    (
        TooManyQueued(reply_to="c1"),
        {
            "type": "error",
            "code": "rate_limited",
            "message": "Too many messages at once; this one is saved but won't be answered.",
            "reply_to": "c1",
            "retry_after": 5,
        },
    ),
    (
        BotChallenge(reply_to="c1"),
        {
            "type": "error",
            "code": "bot_challenge",
            "message": "Please confirm you're here: press the button below to send your message.",
            "reply_to": "c1",
        },
    ),
    (
        BotRefused(reply_to="c1"),
        {
            "type": "error",
            "code": "bot_refused",
            "message": "This message looks automated, so it wasn't answered. If you're a "
            "person, please reload the page and try again.",
            "reply_to": "c1",
        },
    ),
    (
        BotCheckRequired(reply_to="c1"),
        {
            "type": "error",
            "code": "bot_check_required",
            "message": "This chat only works from the shop's chat widget.",
            "reply_to": "c1",
        },
    ),
    (
        IdentityConflict(),
        {
            "type": "error",
            "code": "identity_conflict",
            "message": "This conversation belongs to another shopper; start a new one.",
        },
    ),
    (
        TurnFailed(code="model_unavailable", message="Try again later.", message_id=9),
        {
            "type": "error",
            "code": "model_unavailable",
            "message": "Try again later.",
            "message_id": 9,
        },
    ),
    (
        InternalError(message_id=9),
        {
            "type": "error",
            "code": "internal_error",
            "message": "Something went wrong on our side; your message is saved.",
            "message_id": 9,
        },
    ),
    (
        ProtocolError("empty_message", "message is empty", reply_to="c1"),
        {"type": "error", "code": "empty_message", "message": "message is empty", "reply_to": "c1"},
    ),
    (
        ProtocolError("bad_json", "frame is not valid JSON"),
        {"type": "error", "code": "bad_json", "message": "frame is not valid JSON"},
    ),
    (
        FeedbackError("there is no reply to rate yet"),
        {"type": "error", "code": "unknown_message", "message": "there is no reply to rate yet"},
    ),
    (
        ShopperTokenError("expired", "token has expired"),
        {"type": "error", "code": "bad_token", "message": "token has expired"},
    ),
]


@pytest.mark.parametrize(("refusal", "frame"), CASES, ids=lambda c: type(c).__name__)
def test_every_refusal_renders_to_its_frame(refusal: Refusal, frame: dict[str, Any]) -> None:
    assert refusal_frame(refusal) == frame
    # Same keys in the same order as the documented frames (docs/protocol.md).
    assert list(refusal_frame(refusal)) == list(frame)


def test_only_the_missing_fingerprint_closes_the_connection() -> None:
    closing = {type(r).__name__ for r, _ in CASES if r.close_code is not None}
    assert closing == {"BotCheckRequired"}
    assert BotCheckRequired(reply_to="x").close_code == 4403


def test_protocol_error_keeps_its_frame_and_extra() -> None:
    exc = ProtocolError("bad_field", "field 'id' must be a str", reply_to="c")
    assert exc.frame() == refusal_frame(exc) and exc.extra == {"reply_to": "c"}
    assert isinstance(exc, ValueError) and str(exc) == "field 'id' must be a str"


def test_bot_refusals_cover_every_refusing_action() -> None:
    assert set(BOT_REFUSALS) == {"challenge", "refuse", "refuse_connection"}


# -- message_receive ----------------------------------------------------------------------------


@pytest.mark.django_db
async def test_a_message_that_cannot_be_stored_is_refused_as_store_unavailable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def down(**_: Any) -> Any:
        raise OperationalError("the database system is shutting down")

    monkeypatch.setattr(receive, "message_store_checked", down)
    with pytest.raises(StoreUnavailable) as caught:
        await receive.message_receive(
            conversation_id=1,
            frame=MessageFrame(client_id="c1", text="hi"),
            bot=BotSession.open("off"),
            turns=receive.TurnQueue(),
            rate_key="k",
            client_ip=None,
        )
    assert refusal_frame(caught.value)["reply_to"] == "c1"


@pytest.mark.django_db(transaction=True)
async def test_a_full_queue_acks_the_message_and_refuses_its_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from channels.db import database_sync_to_async

    from chatbot import services

    conversation, _ = await database_sync_to_async(services.conversation_open)(session_key=None)
    turns = receive.TurnQueue()
    for i in range(receive.MAX_QUEUED_TURNS):
        turns.put(message_id=-1 - i, received_at=0.0)
    receipt = await receive.message_receive(
        conversation_id=conversation.pk,
        frame=MessageFrame(client_id="c1", text="hello"),
        bot=BotSession.open("off"),
        turns=turns,
        rate_key=str(conversation.public_id),
        client_ip=None,
    )
    assert receipt.ack == {
        "type": "ack",
        "id": "c1",
        "message_id": receipt.message_id,
        "duplicate": False,
        "answering": True,
    }
    assert isinstance(receipt.refused, TooManyQueued) and not receipt.answer
