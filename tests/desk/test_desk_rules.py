"""The desk's rules on the real database: atomic claim under concurrency, who may see
and do what, nobody online -> ticket -> email, agents gone -> back to the queue,
business hours. Real PostgreSQL (threads with their own connections), Django's
locmem email backend (pytest-django's test environment)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.core import mail
from django.db import connection
from django.test import Client
from django.utils import timezone

from chatbot.handoff import (
    business_hours_parse,
    desk_open,
    handoff_figures,
    handoff_queue,
    presence_connect,
)
from chatbot.models import AgentPresence, Conversation
from desk import services
from desk.models import AuditEvent, Ticket
from tests.desk.conftest import desk_connect, frame_of, user_make
from tests.desk.conftest import desk_open as desk_ws
from tests.shopper import Shopper, connect, frames_until_end, send, shown

pytestmark = pytest.mark.django_db(transaction=True)


def queued_conversation() -> Conversation:
    conversation = Conversation.objects.create()
    handoff_queue(conversation_id=conversation.pk)
    return conversation


def test_two_agents_claim_at_once_exactly_one_wins() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the concurrency test needs PostgreSQL (one connection per thread)")
    a, b = user_make("ann"), user_make("bob")
    for _round in range(15):
        conversation = queued_conversation()
        barrier = threading.Barrier(2)
        outcomes: dict[str, services.Outcome] = {}

        def claim(
            agent: Any,
            key: str,
            conversation_id: int = conversation.pk,
            barrier: threading.Barrier = barrier,
            outcomes: dict[str, services.Outcome] = outcomes,
        ) -> None:
            try:
                barrier.wait(timeout=10)
                outcomes[key] = services.claim(agent_id=agent.pk, conversation_id=conversation_id)
            finally:
                connection.close()  # each thread had its own connection

        threads = [
            threading.Thread(target=claim, args=(a, "a")),
            threading.Thread(target=claim, args=(b, "b")),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        wins = [k for k, o in outcomes.items() if o.ok]
        assert len(outcomes) == 2 and len(wins) == 1, outcomes
        loser = "b" if wins == ["a"] else "a"
        assert outcomes[loser].reason == "taken"
        conversation.refresh_from_db()
        assert conversation.handoff == "claimed"
        assert conversation.handoff_agent_id == (a.pk if wins == ["a"] else b.pk)
        assert AuditEvent.objects.filter(conversation=conversation, action="claim").count() == 1


async def test_the_slower_agent_sees_it_taken_over_the_desk(seeded_shop: None) -> None:
    a = await database_sync_to_async(user_make)("ann2")
    b = await database_sync_to_async(user_make)("bob2")
    conversation = await database_sync_to_async(queued_conversation)()
    async with desk_ws(a) as desk_a, desk_ws(b) as desk_b:
        await desk_a.send_json_to({"type": "claim", "conversation": conversation.pk})
        await desk_b.send_json_to({"type": "claim", "conversation": conversation.pk})
        ra = await frame_of(desk_a, "result", action="claim")
        rb = await frame_of(desk_b, "result", action="claim")
        assert sorted([ra["ok"], rb["ok"]]) == [False, True]
        loser = ra if not ra["ok"] else rb
        assert loser["reason"] == "taken"
        # The loser's inbox no longer lists it: agents see only queued and their own.
        loser_desk = desk_a if loser is ra else desk_b
        inbox = await frame_of(loser_desk, "inbox")
        while any(c["id"] == conversation.pk for c in inbox["queue"]):
            inbox = await frame_of(loser_desk, "inbox")
        assert all(c["id"] != conversation.pk for c in inbox["queue"] + inbox["mine"])
        await loser_desk.send_json_to({"type": "open", "conversation": conversation.pk})
        assert (await frame_of(loser_desk, "error"))["code"] == "forbidden"


def test_permissions_shoppers_operators_agents(client: Client) -> None:
    from django.contrib.auth.models import Group

    from releases.permissions import OPERATORS, groups_ensure

    groups_ensure()
    assert Group.objects.filter(name=OPERATORS).exists()
    # A shopper is never a Django user: the login page, never the desk.
    anonymous = client.get("/desk/")
    assert anonymous.status_code == 302 and "/admin/login/" in anonymous["Location"]
    operator = user_make("olga", group=OPERATORS)
    client.force_login(operator)
    assert client.get("/desk/").status_code == 403
    # ... but reads the figures in the operator console.
    console = client.get("/operators/")
    assert console.status_code == 200
    assert b"Human handoff" in console.content
    assert b"Human intervention rate" in console.content
    assert b"chart-handoff-first-reply" in console.content
    prometheus = client.get("/metrics")
    assert prometheus.status_code == 200
    assert b"tierdesk_handoff_intervention_ratio" in prometheus.content
    assert b"tierdesk_agents_online 0.0" in prometheus.content
    agent = user_make("alex", first_name="Alex")
    client.force_login(agent)
    page = client.get("/desk/")
    assert page.status_code == 200 and b"Alex" in page.content
    # Agents see only the queue and their own conversations.
    mine, others, queued = (queued_conversation() for _ in range(3))
    other_agent = user_make("zed")
    assert services.claim(agent_id=agent.pk, conversation_id=mine.pk).ok
    assert services.claim(agent_id=other_agent.pk, conversation_id=others.pk).ok
    Conversation.objects.create()  # a bot-only conversation: never on the desk
    inbox = services.inbox(agent_id=agent.pk)
    assert [c["id"] for c in inbox["queue"]] == [queued.pk]
    # The id the shopper's widget knows, so a reference the shopper quotes finds the chat.
    assert [c["public_id"] for c in inbox["queue"]] == [str(queued.public_id)]
    assert [c["id"] for c in inbox["mine"]] == [mine.pk]
    with pytest.raises(services.DeskDenied):
        services.conversation_detail(agent_id=agent.pk, conversation_id=others.pk)
    with pytest.raises(services.DeskDenied):
        services.note_add(agent_id=agent.pk, conversation_id=others.pk, text="peek")
    assert not services.resolve(agent_id=agent.pk, conversation_id=others.pk).ok
    assert not services.transfer(
        agent_id=agent.pk, conversation_id=others.pk, to_agent_id=agent.pk
    ).ok


async def test_desk_socket_refuses_shoppers_and_operators(db: None) -> None:
    from releases.permissions import OPERATORS, groups_ensure

    await database_sync_to_async(groups_ensure)()
    _comm, connected = await desk_connect(None)
    assert not connected
    operator = await database_sync_to_async(user_make)("oscar", group=OPERATORS)
    _comm, connected = await desk_connect(operator)
    assert not connected


async def test_nobody_online_ticket_is_stored_emailed_and_answered(
    seeded_shop: None, fake_models: Any
) -> None:
    shopper, hello = await connect()
    await send(shopper, "can I talk to a real person?", "t1")
    frames = await frames_until_end(shopper)
    handoff = [f for f in frames if f["type"] == "handoff"]
    assert handoff == [
        {"type": "handoff", "status": "unavailable", "reason": "nobody_online", "language": "en"}
    ]
    assert "nobody from our support team is online" in shown(frames)
    assert await Conversation.objects.filter(handoff="queued").acount() == 0
    await shopper.disconnect()

    client = Client()
    bad = await database_sync_to_async(client.post)(
        "/tickets/",
        {"session": hello["session"], "email": "nope", "question": "x"},
        content_type="application/json",
    )
    assert bad.status_code == 400
    forged = await database_sync_to_async(client.post)(
        "/tickets/",
        {"session": "not-a-session", "email": "a@b.example", "question": "x"},
        content_type="application/json",
    )
    assert forged.status_code == 403
    response = await database_sync_to_async(client.post)(
        "/tickets/",
        {
            "session": hello["session"],
            "email": "jane@example.com",
            "question": "My parcel arrived wet. What now?",
        },
        content_type="application/json",
    )
    assert response.status_code == 200 and response.json()["ok"] is True
    assert len(mail.outbox) == 1
    to_shop = mail.outbox[0]
    assert to_shop.to == ["support@shop.example"]
    assert "jane@example.com" in to_shop.body and "arrived wet" in to_shop.body

    agent = await database_sync_to_async(user_make)("tess")
    async with desk_ws(agent) as desk:
        inbox = await frame_of(desk, "inbox")
        assert [t["email"] for t in inbox["tickets"]] == ["jane@example.com"]
        ticket_id = inbox["tickets"][0]["id"]
        await desk.send_json_to(
            {"type": "ticket_answer", "ticket": ticket_id, "text": "Send us a photo, please."}
        )
        assert (await frame_of(desk, "result", action="ticket_answer"))["ok"] is True
        # A second answer to the same ticket sends nothing.
        await desk.send_json_to({"type": "ticket_answer", "ticket": ticket_id, "text": "again"})
        assert (await frame_of(desk, "result", action="ticket_answer"))["ok"] is False
    assert len(mail.outbox) == 2
    reply = mail.outbox[1]
    assert reply.to == ["jane@example.com"] and "Send us a photo" in reply.body
    ticket = await Ticket.objects.aget(pk=ticket_id)
    assert ticket.status == "answered" and ticket.answered_by_id == agent.pk


async def test_nobody_online_fills_the_ticket_email_only_for_a_signed_in_shopper(
    seeded_shop: None, fake_models: Any, settings: Any
) -> None:
    # The typed-identity path below needs a shop that lets it read orders (off by default).
    settings.TIERDESK_CHAT_IDENTITY_READS = True
    # The shop signed this shopper in: the frame carries their email for the ticket form.
    signed_in = await Shopper.connect()
    await signed_in.identify("james_li_5688")
    await send(signed_in.comm, "can I talk to a real person?", "t1")
    frames = await frames_until_end(signed_in.comm)
    handoff = [f for f in frames if f["type"] == "handoff"]
    assert handoff == [
        {
            "type": "handoff",
            "status": "unavailable",
            "reason": "nobody_online",
            "email": "james.li4495@example.com",
            "language": "en",
        }
    ]
    await signed_in.close()
    # Verified in the chat by name and zip only: the email is not shown back.
    typed = await Shopper.connect()
    await typed.ask("where is my order #W2611340?")  # asks who they are
    await typed.ask("I'm James Li, zip 10083")
    await send(typed.comm, "can I talk to a real person?", "t2")
    frames = await frames_until_end(typed.comm)
    conversation = await Conversation.objects.aget(session_key=typed.hello["session"])
    assert conversation.identity == Conversation.Identity.NAME_ZIP
    assert [f.get("email") for f in frames if f["type"] == "handoff"] == [None]
    await typed.close()


def test_agent_gone_past_the_timeout_returns_the_conversation_to_the_queue(
    settings: Any,
) -> None:
    settings.TIERDESK_HANDOFF_AGENT_TIMEOUT_S = 60
    agent = user_make("gina")
    presence_connect(user_id=agent.pk)
    first = queued_conversation()
    second = queued_conversation()
    assert services.claim(agent_id=agent.pk, conversation_id=second.pk).ok
    # Within the timeout (a reload, a blip): still the agent's.
    assert services.requeue_abandoned() == []
    AgentPresence.objects.filter(user=agent).update(
        connections=0, last_seen=timezone.now() - timedelta(seconds=61)
    )
    assert services.requeue_abandoned() == [second.pk]
    second.refresh_from_db()
    assert second.handoff == "queued" and second.handoff_agent_id is None
    # Back at its old place: behind the first, which was queued earlier.
    assert [c["id"] for c in services.inbox(agent_id=agent.pk)["queue"]] == [first.pk, second.pk]
    assert AuditEvent.objects.filter(conversation=second, action="requeue").exists()


def test_business_hours_and_timezone(settings: Any) -> None:
    settings.TIERDESK_BUSINESS_HOURS = "mon-fri 09:00-18:00; sat 10:00-14:00"
    settings.TIERDESK_BUSINESS_TIMEZONE = "Asia/Shanghai"
    # Monday 2026-11-30 02:00 UTC is 10:00 in Shanghai: open.
    assert desk_open(datetime(2026, 11, 30, 2, 0, tzinfo=UTC))
    # Monday 11:00 UTC is 19:00 in Shanghai: closed.
    assert not desk_open(datetime(2026, 11, 30, 11, 0, tzinfo=UTC))
    # Saturday 05:59 UTC is 13:59 in Shanghai: open; Sunday never.
    assert desk_open(datetime(2026, 12, 5, 5, 59, tzinfo=UTC))
    assert not desk_open(datetime(2026, 12, 6, 3, 0, tzinfo=UTC))
    assert business_hours_parse("fri-mon 22:00-24:00")[0][0] == {4, 5, 6, 0}
    with pytest.raises(ValueError):
        business_hours_parse("weekdays 9-5")


async def test_outside_business_hours_the_bot_offers_a_ticket(
    seeded_shop: None, fake_models: Any, settings: Any
) -> None:
    settings.TIERDESK_BUSINESS_HOURS = "mon 00:00-00:01"
    agent = await database_sync_to_async(user_make)("nina")
    async with desk_ws(agent):
        shopper, _ = await connect()
        await send(shopper, "人工客服", "c1")
        frames = await frames_until_end(shopper)
        # In the shopper's language, whatever the page's: the widget's ticket form and
        # buttons follow it (docs/i18n.md).
        unavailable = {"type": "handoff", "status": "unavailable", "reason": "closed"}
        assert {**unavailable, "language": "zh"} in frames
        assert "工作时间" in shown(frames)
        assert [f["language"] for f in frames if f["type"] == "done"] == ["zh"]
        await shopper.disconnect()


def test_figures_intervention_first_reply_handle_csat() -> None:
    from chatbot.handoff import agent_message_store, handoff_claim, handoff_resolve

    agent = user_make("fay")
    for _ in range(3):
        Conversation.objects.create()  # bot only
    conversation = queued_conversation()
    assert handoff_claim(conversation_id=conversation.pk, agent_id=agent.pk)
    assert agent_message_store(
        conversation_id=conversation.pk, agent_id=agent.pk, text="hi", agent_name="Fay"
    )
    assert handoff_resolve(conversation_id=conversation.pk, agent_id=agent.pk)
    figures = handoff_figures()
    assert figures.conversations == 4 and figures.handed_off == 1
    assert figures.intervention_rate == 0.25
    assert figures.first_reply_s is not None and figures.first_reply_s >= 0
    assert figures.handle_s is not None and figures.handle_s >= 0


def test_canned_replies_and_approved_answers_for_the_reply_box(seeded_shop: None) -> None:
    from knowledge.models import AnswerCard, Document

    canned = services.canned_replies(language="en")
    texts = [c["text"] for c in canned]
    assert "OK, I'll keep helping you myself. What else can I do?" in texts
    assert all("{" not in t for t in texts)  # placeholders need order data: not offered
    assert any("继续" in c["text"] for c in services.canned_replies(language="zh"))
    # An agent reads topics and the replies' own words, never internal keys.
    for c in canned:
        assert "_" not in c["group"] and "·" not in c["label"]
        assert len(c["label"]) <= 71
        assert " ".join(c["text"].split()).startswith(c["label"].rstrip("…"))
    assert "Cancel order" in {c["group"] for c in canned}

    document = Document.objects.create(title="Boots care", text="Waterproofing...")
    common = {"document": document, "language": "en", "section_text": "s", "section_hash": "h"}
    AnswerCard.objects.create(
        **common,
        anchor="waterproof",
        heading="Are the boots waterproof?",
        questions=["are the boots waterproof"],
        answer="Yes, the Trail boots are waterproof to 10 cm.",
        status=AnswerCard.Status.APPROVED,
    )
    AnswerCard.objects.create(
        **common,
        anchor="draft",
        heading="Waterproof draft",
        questions=["waterproof?"],
        answer="Unreviewed.",
        status=AnswerCard.Status.DRAFT,
    )
    results = services.kb_search(query="waterproof", language="en")
    assert [c["answer"] for c in results["cards"]] == [
        "Yes, the Trail boots are waterproof to 10 cm."
    ]


def test_yes_after_both_offers_keeps_meaning_the_large_tier(seeded_shop: None) -> None:
    """L2 offers the large tier and a person at once: a bare "yes" goes to L3, the
    offer it answers first; a "yes" to a person alone queues."""
    import time as _time

    from chatbot.answerers.base import TurnContext
    from chatbot.handoff_dialogue import handoff_continue

    agent = user_make("olive")
    presence_connect(user_id=agent.pk)
    now = _time.time()
    both = TurnContext(
        text="yes",
        language="en",
        state={"pending_handoff": {"at": now}, "pending_offer": {"question": "q", "at": now}},
        customer_id="",
        history=[],
    )
    assert handoff_continue(both, yes=True, no=False) is None
    assert "pending_handoff" not in both.state
    alone = TurnContext(
        text="yes",
        language="en",
        state={"pending_handoff": {"at": now}},
        customer_id="",
        history=[],
    )
    plan = handoff_continue(alone, yes=True, no=False)
    assert plan is not None and plan.actions == ["handoff:queue"]


def test_a_shoppers_tickets_are_exported_and_erased_with_their_data(db: None) -> None:
    from chatbot.privacy import shopper_erase, shopper_export

    conversation = Conversation.objects.create(customer_id="jane_1")
    Ticket.objects.create(conversation=conversation, email="jane@x.example", question="wet box")
    Ticket.objects.create(email="Jane@X.example", question="by email only")
    Ticket.objects.create(email="other@x.example", question="someone else")
    exported = shopper_export(customer_id="jane_1", emails=["jane@x.example"])
    assert sorted(r["question"] for r in exported["desk"]) == ["by email only", "wet box"]
    counts = shopper_erase(customer_id="jane_1", emails=["jane@x.example"])
    assert counts["desk"] == 2
    assert list(Ticket.objects.values_list("question", flat=True)) == ["someone else"]


def test_transfer_moves_the_conversation_and_is_audited() -> None:
    from chatbot.handoff import handoff_status

    a, b = user_make("tara", first_name="Tara"), user_make("uma", first_name="Uma")
    outsider = user_make("nobody_special", group=None)
    conversation = queued_conversation()
    assert services.claim(agent_id=a.pk, conversation_id=conversation.pk).ok
    # Only to an agent, and only by the holder.
    assert services.transfer(
        agent_id=a.pk, conversation_id=conversation.pk, to_agent_id=outsider.pk
    ) == services.Outcome(False, "unknown_agent")
    assert not services.transfer(
        agent_id=b.pk, conversation_id=conversation.pk, to_agent_id=b.pk
    ).ok
    assert services.transfer(agent_id=a.pk, conversation_id=conversation.pk, to_agent_id=b.pk).ok
    assert [c["id"] for c in services.inbox(agent_id=b.pk)["mine"]] == [conversation.pk]
    assert services.inbox(agent_id=a.pk)["mine"] == []
    assert handoff_status(conversation_id=conversation.pk) == {
        "type": "handoff",
        "status": "claimed",
        "agent": "Uma",
    }
    assert not services.resolve(agent_id=a.pk, conversation_id=conversation.pk).ok
    assert services.resolve(agent_id=b.pk, conversation_id=conversation.pk).ok
    assert list(
        AuditEvent.objects.filter(conversation=conversation)
        .order_by("id")
        .values_list("action", "actor__username", "detail")
    ) == [("claim", "tara", {}), ("transfer", "tara", {"to": b.pk}), ("resolve", "uma", {})]


def test_the_customer_panel_shows_totals_in_the_shops_currency(seeded_shop: None) -> None:
    from chatbot.orders.models import Customer
    from shop.models import ShopProfile
    from shop.values import demo_profile_values

    row = ShopProfile(**demo_profile_values() | {"currency_code": "GBP", "currency_symbol": "£"})
    row.full_clean()
    row.save()
    agent = user_make("gia")
    customer = Customer.objects.filter(orders__isnull=False).first()
    assert customer is not None
    conversation = queued_conversation()
    Conversation.objects.filter(pk=conversation.pk).update(
        customer_id=customer.customer_id, identity="token"
    )
    assert services.claim(agent_id=agent.pk, conversation_id=conversation.pk).ok
    detail = services.conversation_detail(agent_id=agent.pk, conversation_id=conversation.pk)
    orders = detail["customer"]["orders"]
    assert orders and all(o["total_shown"] == f"£{o['total']}" for o in orders)
