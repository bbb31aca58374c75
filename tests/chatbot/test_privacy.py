"""Issue #18 items 2 and 3: personal data has a retention period, one shopper's data
can be exported and erased (admin actions and ``manage.py shopper_data``) and nothing
of theirs is left after the erase; the session key never appears in the admin."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from chatbot.models import BotCheck, Conversation, Feedback, Message
from chatbot.privacy import privacy_purge, shopper_erase, shopper_export

pytestmark = pytest.mark.django_db

JAMES = "james_li_5688"
SECRET_WORDS = "my parcel for 12 Baker Street"


def conversation_of(customer_id: str, *, ip: str = "203.0.113.9") -> Conversation:
    """A conversation with everything a shopper leaves behind: messages, a rating, a
    bot-check row, the client's IP and user agent."""
    conversation = Conversation.objects.create(
        customer_id=customer_id, identity="email", client_ip=ip, user_agent="Firefox/140"
    )
    asked = Message.objects.create(
        conversation=conversation,
        role="user",
        text=f"{customer_id}: {SECRET_WORDS}",
        status="received",
    )
    reply = Message.objects.create(
        conversation=conversation, role="bot", text="It ships today.", status="complete"
    )
    Feedback.objects.create(
        conversation=conversation,
        message=reply,
        kind="thumb",
        value=1,
        satisfied=True,
        minute=timezone.now(),
    )
    BotCheck.objects.create(
        conversation=conversation, message=asked, action="allow", reason="human"
    )
    return conversation


def nothing_left_of(customer_id: str) -> None:
    assert not Conversation.objects.filter(customer_id=customer_id).exists()
    assert not Message.objects.filter(text__startswith=f"{customer_id}:").exists()
    assert not Feedback.objects.filter(conversation__customer_id=customer_id).exists()
    assert not BotCheck.objects.filter(conversation__customer_id=customer_id).exists()
    assert not Conversation.objects.filter(client_ip="203.0.113.9").exists()


def test_export_holds_everything_and_erase_leaves_nothing() -> None:
    conversation_of(JAMES)
    conversation_of(JAMES)
    other = conversation_of("mei_patel_7272", ip="198.51.100.7")
    exported = shopper_export(customer_id=JAMES)
    assert len(exported["conversations"]) == 2
    first = exported["conversations"][0]
    assert first["client_ip"] == "203.0.113.9" and first["user_agent"] == "Firefox/140"
    assert [m["text"] for m in first["messages"]] == [f"{JAMES}: {SECRET_WORDS}", "It ships today."]
    assert first["ratings"][0]["value"] == 1 and first["bot_checks"][0]["action"] == "allow"
    json.dumps(exported)  # the document is JSON as it is
    counts = shopper_erase(customer_id=JAMES)
    assert counts["conversations"] > 0
    nothing_left_of(JAMES)
    # Another shopper's data is untouched.
    assert Message.objects.filter(conversation=other).count() == 2


def test_management_command_exports_then_erases(seeded_shop: None, tmp_path: Any) -> None:
    conversation_of(JAMES)
    out = tmp_path / "james.json"
    # By email: the command finds the customer in the order system.
    call_command("shopper_data", "export", "--email", "james.li4495@example.com", "--output", out)
    document = json.loads(out.read_text())
    assert document["customer_id"] == JAMES and document["conversations"]
    call_command("shopper_data", "erase", "--customer-id", JAMES, "--yes", stdout=StringIO())
    nothing_left_of(JAMES)


def test_retention_purge_is_by_age_and_idempotent(settings: Any) -> None:
    settings.TIERDESK_RETENTION_MESSAGES_DAYS = 365
    settings.TIERDESK_RETENTION_CLIENT_IP_DAYS = 30
    settings.TIERDESK_RETENTION_FEEDBACK_DAYS = 90
    settings.TIERDESK_BOTCHECK_RETENTION_DAYS = 30
    now = timezone.now()
    old = conversation_of(JAMES)
    middle = conversation_of("mei_patel_7272", ip="198.51.100.7")
    fresh = conversation_of("omar_khan_2363", ip="192.0.2.1")
    # update() keeps auto_now from moving the dates back to now.
    Conversation.objects.filter(pk=old.pk).update(
        created_at=now - timedelta(days=400), updated_at=now - timedelta(days=400)
    )
    Conversation.objects.filter(pk=middle.pk).update(
        created_at=now - timedelta(days=100), updated_at=now - timedelta(days=1)
    )
    Feedback.objects.filter(conversation=middle).update(created_at=now - timedelta(days=100))
    BotCheck.objects.filter(conversation=middle).update(created_at=now - timedelta(days=100))
    counts = privacy_purge(now=now)
    assert counts == {
        "conversations": 1,
        "attachments": 0,
        "client_ips": 1,
        "feedback": 1,
        "bot_checks": 1,
        "tickets": 0,
    }
    nothing_left_of(JAMES)
    middle.refresh_from_db()
    assert middle.client_ip is None and middle.user_agent == ""
    assert middle.messages.count() == 2  # recent activity keeps the conversation
    assert not Feedback.objects.filter(conversation=middle).exists()
    fresh.refresh_from_db()
    assert fresh.client_ip == "192.0.2.1" and Feedback.objects.filter(conversation=fresh).exists()
    assert privacy_purge(now=now) == {
        "conversations": 0,
        "attachments": 0,
        "client_ips": 0,
        "feedback": 0,
        "bot_checks": 0,
        "tickets": 0,
    }


def test_tickets_fall_under_retention(settings: Any) -> None:
    from desk.models import AuditEvent, Ticket

    settings.TIERDESK_RETENTION_TICKETS_DAYS = 365
    now = timezone.now()
    old = Ticket.objects.create(email="a@example.com", question="old, never answered")
    answered_late = Ticket.objects.create(
        email="b@example.com", question="old, answered lately", status="answered", answer="ok"
    )
    fresh = Ticket.objects.create(email="c@example.com", question="this week")
    Ticket.objects.filter(pk__in=[old.pk, answered_late.pk]).update(
        created_at=now - timedelta(days=500)
    )
    Ticket.objects.filter(pk=answered_late.pk).update(answered_at=now - timedelta(days=10))
    audit = AuditEvent.objects.create(ticket=old, action=AuditEvent.Action.TICKET_REPLY)

    assert privacy_purge(now=now)["tickets"] == 1
    assert set(Ticket.objects.values_list("pk", flat=True)) == {answered_late.pk, fresh.pk}
    audit.refresh_from_db()
    assert audit.ticket_id is None  # the audit trail stays, without the shopper's data
    assert privacy_purge(now=now)["tickets"] == 0  # idempotent
    # A year later the late answer is past retention too; 0 keeps tickets for ever.
    settings.TIERDESK_RETENTION_TICKETS_DAYS = 0
    assert privacy_purge(now=now + timedelta(days=400))["tickets"] == 0
    settings.TIERDESK_RETENTION_TICKETS_DAYS = 365
    assert privacy_purge(now=now + timedelta(days=400))["tickets"] == 2


@pytest.fixture
def admin_client_() -> Client:
    user = User.objects.create_superuser("root", "root@example.com", "pw")
    client = Client()
    client.force_login(user)
    return client


def test_admin_never_shows_or_searches_the_session_key(admin_client_: Client) -> None:
    conversation = conversation_of(JAMES)
    key = conversation.session_key
    page = admin_client_.get(f"/admin/chatbot/conversation/{conversation.pk}/change/")
    assert page.status_code == 200 and JAMES in page.content.decode()
    assert key not in page.content.decode()
    listing = admin_client_.get("/admin/chatbot/conversation/")
    assert listing.status_code == 200 and key not in listing.content.decode()
    # Searching by the key finds nothing: it is not a search field.
    found = admin_client_.get("/admin/chatbot/conversation/", {"q": key})
    assert str(conversation.public_id) not in found.content.decode()


def test_admin_actions_export_and_erase(admin_client_: Client) -> None:
    conversation = conversation_of(JAMES)
    conversation_of(JAMES)
    url = "/admin/chatbot/conversation/"
    exported = admin_client_.post(
        url, {"action": "shopper_data_export", "_selected_action": [conversation.pk]}
    )
    assert exported["Content-Type"] == "application/json"
    documents = json.loads(exported.content)
    assert documents[0]["customer_id"] == JAMES and len(documents[0]["conversations"]) == 2
    erased = admin_client_.post(
        url, {"action": "shopper_data_erase", "_selected_action": [conversation.pk]}
    )
    assert erased.status_code == 302
    nothing_left_of(JAMES)
