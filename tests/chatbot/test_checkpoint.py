"""Partial replies are written while they stream (``ReplyCheckpoint``), so a process killed
mid-reply leaves what the shopper already saw (tests/browser/test_daphne_kill.py is the
end-to-end case)."""

from __future__ import annotations

from typing import Any

import pytest

from chatbot.answerers.base import Reply
from chatbot.models import Conversation, Message
from chatbot.turn import ReplyCheckpoint

pytestmark = pytest.mark.django_db(transaction=True)


async def _reply(text: str = "", status: str = Message.Status.STREAMING) -> Message:
    return await Message.objects.acreate(
        conversation=await Conversation.objects.acreate(), role="bot", text=text, status=status
    )


async def test_the_first_chunk_is_written_at_once_then_at_most_once_per_interval(
    settings: Any,
) -> None:
    settings.TIERDESK_REPLY_CHECKPOINT_MS = 60_000
    reply = await _reply()
    checkpoint = ReplyCheckpoint(reply.pk)
    await checkpoint.maybe(Reply(["Leather boots"]))
    await reply.arefresh_from_db()
    assert reply.text == "Leather boots"
    await checkpoint.maybe(Reply(["Leather boots keep"]))  # within the interval: not written
    await reply.arefresh_from_db()
    assert reply.text == "Leather boots"
    checkpoint.last -= 61  # the interval has passed
    await checkpoint.maybe(Reply(["Leather boots keep water out"]))
    await reply.arefresh_from_db()
    assert reply.text == "Leather boots keep water out"


async def test_a_finished_reply_is_never_overwritten(settings: Any) -> None:
    settings.TIERDESK_REPLY_CHECKPOINT_MS = 1
    reply = await _reply("The whole answer.", Message.Status.COMPLETE)
    await ReplyCheckpoint(reply.pk).maybe(Reply(["The whole"]))
    await reply.arefresh_from_db()
    assert reply.text == "The whole answer."


async def test_zero_disables_it(settings: Any) -> None:
    settings.TIERDESK_REPLY_CHECKPOINT_MS = 0
    reply = await _reply()
    await ReplyCheckpoint(reply.pk).maybe(Reply(["anything"]))
    await reply.arefresh_from_db()
    assert reply.text == ""
