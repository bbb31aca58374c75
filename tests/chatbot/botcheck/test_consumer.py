"""The consumer with the check on: nonce in hello, refusals before storage or models,
features (never events) stored, retention. WebsocketCommunicator on the real ASGI app."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from pytest_django.fixtures import Settings as SettingsWrapper

from chatbot.botcheck.store import botcheck_purge
from chatbot.models import BotCheck, Message
from chatbot.tasks import botcheck_purge as botcheck_purge_task
from tests.fakes import FakeBackend
from tests.shopper import connect

from .helpers import CONSTANT_TYPIST, HUMAN, evidence

pytestmark = pytest.mark.django_db(transaction=True)
TEXT = "where is my order #W2611340?"


@pytest.fixture
def enforcing(settings: SettingsWrapper) -> SettingsWrapper:
    settings.TIERDESK_BOTCHECK = "enforce"
    return settings


def model_calls(fakes: dict[str, FakeBackend]) -> int:
    return sum(len(f.calls) for f in fakes.values())


async def test_human_message_is_answered_and_only_features_are_stored(
    enforcing: SettingsWrapper, seeded_shop: None, fake_models: dict[str, FakeBackend]
) -> None:
    comm, hello = await connect()
    nonce = hello["botcheck"]["nonce"]
    assert hello["botcheck"]["mode"] == "enforce" and len(nonce) == 32
    bot = evidence(nonce, 1, HUMAN, TEXT)
    await comm.send_json_to({"type": "message", "id": "h1", "text": TEXT, "bot": bot})
    ack = await comm.receive_json_from(timeout=10)
    assert ack["type"] == "ack" and ack["duplicate"] is False
    while (frame := await comm.receive_json_from(timeout=30))["type"] not in ("done", "error"):
        pass
    assert frame["type"] == "done"
    await comm.disconnect()
    row = await BotCheck.objects.aget(client_id="h1")
    assert (row.action, row.reason, row.message_id) == ("allow", "ok", ack["message_id"])
    assert row.features["key_interval_cv"] == 0.6 and len(row.features) == 18
    # Features only: no positions, timestamps or key lists anywhere in the row.
    assert set(row.features) == set(HUMAN) and all(
        isinstance(v, float) for v in row.features.values()
    )


async def test_scripted_typing_is_refused_before_storage_and_models(
    enforcing: SettingsWrapper, seeded_shop: None, fake_models: dict[str, FakeBackend]
) -> None:
    comm, hello = await connect()
    bot = evidence(hello["botcheck"]["nonce"], 1, CONSTANT_TYPIST, TEXT)
    await comm.send_json_to({"type": "message", "id": "b1", "text": TEXT, "bot": bot})
    frame = await comm.receive_json_from(timeout=10)
    assert frame["type"] == "error" and frame["code"] == "bot_refused"
    assert frame["reply_to"] == "b1"
    assert await comm.receive_nothing(timeout=0.3)
    await comm.disconnect()
    assert not await Message.objects.filter(client_id="b1").aexists()
    assert model_calls(fake_models) == 0
    row = await BotCheck.objects.aget(client_id="b1")
    assert (
        row.action == "refuse" and row.message_id is None and "uniform_key_intervals" in row.signals
    )


async def test_fingerprint_from_another_connection_is_refused(
    enforcing: SettingsWrapper, seeded_shop: None, fake_models: dict[str, FakeBackend]
) -> None:
    first, hello = await connect()
    bot = evidence(hello["botcheck"]["nonce"], 1, HUMAN, TEXT)
    second, _ = await connect()
    await second.send_json_to({"type": "message", "id": "r1", "text": TEXT, "bot": bot})
    frame = await second.receive_json_from(timeout=10)
    assert frame["code"] == "bot_refused"
    await first.disconnect()
    await second.disconnect()
    assert (await BotCheck.objects.aget(client_id="r1")).reason == "binding"
    assert model_calls(fake_models) == 0


async def test_client_without_fingerprint_is_refused_and_closed(
    enforcing: SettingsWrapper, seeded_shop: None, fake_models: dict[str, FakeBackend]
) -> None:
    comm, _ = await connect()
    await comm.send_json_to({"type": "message", "id": "raw", "text": TEXT})
    frame = await comm.receive_json_from(timeout=10)
    assert frame["code"] == "bot_check_required"
    closed = await comm.receive_output(timeout=10)
    assert closed == {"type": "websocket.close", "code": 4403}
    assert not await Message.objects.filter(client_id="raw").aexists()
    assert model_calls(fake_models) == 0


async def test_challenge_then_a_human_resend_is_answered(
    settings: SettingsWrapper, seeded_shop: None, fake_models: dict[str, FakeBackend]
) -> None:
    settings.TIERDESK_BOTCHECK = "challenge"
    comm, hello = await connect()
    nonce = hello["botcheck"]["nonce"]
    await comm.send_json_to(
        {
            "type": "message",
            "id": "c1",
            "text": TEXT,
            "bot": evidence(nonce, 1, CONSTANT_TYPIST, TEXT),
        }
    )
    assert (await comm.receive_json_from(timeout=10))["code"] == "bot_challenge"
    # The widget resends the same message with the evidence of the click on its button.
    await comm.send_json_to(
        {"type": "message", "id": "c1", "text": TEXT, "bot": evidence(nonce, 2, HUMAN, TEXT)}
    )
    ack = await comm.receive_json_from(timeout=10)
    assert ack["type"] == "ack" and ack["duplicate"] is False
    await comm.disconnect()


async def test_off_sends_no_nonce_and_accepts_plain_messages(
    settings: SettingsWrapper, seeded_shop: None, fake_models: dict[str, FakeBackend]
) -> None:
    settings.TIERDESK_BOTCHECK = "off"
    comm, hello = await connect()
    assert hello["botcheck"] is None
    await comm.send_json_to({"type": "message", "id": "o1", "text": TEXT})
    assert (await comm.receive_json_from(timeout=10))["type"] == "ack"
    await comm.disconnect()
    assert not await BotCheck.objects.aexists()


async def test_malformed_fingerprint_is_a_bad_field(
    enforcing: SettingsWrapper, seeded_shop: None
) -> None:
    comm, _ = await connect()
    await comm.send_json_to({"type": "message", "id": "m1", "text": TEXT, "bot": {"v": 1}})
    frame = await comm.receive_json_from(timeout=10)
    assert frame["code"] == "bad_field" and frame["reply_to"] == "m1"
    await comm.disconnect()


def test_retention_purges_old_features(settings: SettingsWrapper, seeded_shop: None) -> None:
    from chatbot.models import Conversation

    settings.TIERDESK_BOTCHECK_RETENTION_DAYS = 30
    conversation = Conversation.objects.create()
    old = BotCheck.objects.create(conversation=conversation, action="allow", reason="ok")
    new = BotCheck.objects.create(conversation=conversation, action="allow", reason="ok")
    BotCheck.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=31))
    assert botcheck_purge() == 1
    assert list(BotCheck.objects.values_list("pk", flat=True)) == [new.pk]
    BotCheck.objects.filter(pk=new.pk).update(created_at=timezone.now() - timedelta(days=40))
    assert botcheck_purge_task() == 1  # the beat task does the same
