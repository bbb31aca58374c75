"""Issue #18 items 9-14: the rough edges a shopper, a support admin and an operator hit
in the first week. Real PostgreSQL/Redis through the real ASGI app; the browser side of
items 9 and 10 is in tests/browser/test_rough_edges_browser.py."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async

from chatbot.models import Conversation, Message
from chatbot.orders.identity import shopper_token_issue
from tests.shopper import connect, frames_until_end, send

pytestmark = pytest.mark.django_db(transaction=True)

MEI = "mei_patel_7272"  # owns #W9583042 (pending)


# -- item 9: a reload keeps Sources and a pending confirmation's Yes/No ------------------


@pytest.mark.usefixtures("isolated_state")
async def test_history_after_reconnect_carries_the_confirmation_the_reply_asks_for(
    seeded_shop: None, fake_models: Any
) -> None:
    comm, hello = await connect()
    await comm.send_json_to({"type": "identify", "token": shopper_token_issue(customer_id=MEI)})
    assert (await comm.receive_json_from())["type"] == "identified"
    await send(comm, "cancel #W9583042, ordered by mistake", "c1")
    assert (await comm.receive_json_from())["type"] == "ack"
    done = (await frames_until_end(comm))[-1]
    assert done["type"] == "done" and done["actions"] == ["confirm"], done
    await comm.disconnect()

    comm, again = await connect(hello["session"])
    last = again["history"][-1]
    assert last["message_id"] == done["message_id"]
    assert last["actions"] == ["confirm"] and last["citations"] == []
    # The shopper's own message carries neither.
    assert again["history"][-2]["role"] == "user" and again["history"][-2]["actions"] == []
    await comm.disconnect()


async def test_history_carries_a_replys_citations_with_their_heading(seeded_shop: None) -> None:
    comm, hello = await connect()
    await comm.disconnect()
    citation = {
        "document_id": 7,
        "chunk_id": 70,
        "title": "Gift cards",
        "anchor": "do-gift-cards-expire",
        "heading": "Do gift cards expire?",
        "snippet": "Gift cards never expire.",
        "score": 0.5,
    }

    def store() -> int:
        conv = Conversation.objects.get(session_key=hello["session"])
        reply = _exchange(
            conv,
            "do gift cards expire?",
            "No, gift cards never expire.",
            tier="L2",
            metadata={"citations": [citation], "actions": [], "guard": "passed"},
        )
        return reply.pk

    reply_id = await database_sync_to_async(store)()
    comm, again = await connect(hello["session"])
    last = again["history"][-1]
    assert last["message_id"] == reply_id and last["citations"] == [citation]
    await comm.disconnect()


def test_a_passage_citation_names_its_heading_not_only_the_slug() -> None:
    from knowledge.retrieval import Passage

    passage = Passage(
        chunk_id=1,
        document_id=2,
        title="Gift cards",
        anchor="do-gift-cards-expire",
        heading="Gift cards > Do gift cards expire?",
        text="Gift cards never expire.",
        language="en",
        score=0.3,
        similarity=0.8,
        coverage=1.0,
        bm25=None,
        relevant=True,
    )
    cited = passage.citation()
    assert cited["heading"] == "Do gift cards expire?" and cited["anchor"] == "do-gift-cards-expire"


# -- item 12: the admin's conversation page is a transcript; the lists say more --------


def _exchange(conv: Conversation, question: str, answer: str, **reply: Any) -> Message:
    """A stored shopper message (message_store, as the chat stores it) and its reply."""
    from chatbot.services import message_store

    ask, _ = message_store(conversation_id=conv.pk, client_id=question[:60], text=question)
    return Message.objects.create(
        conversation=conv, role="bot", reply_to=ask, text=answer, status="complete", **reply
    )


def _conversation_with_turns() -> tuple[Conversation, Message]:
    from django.utils import timezone

    from chatbot.models import Feedback

    conv = Conversation.objects.create(customer_id="james_li_5688")
    reply = _exchange(
        conv,
        "我的订单在哪里？",
        "您的订单 #W2611340 已发货。",
        tier="L1",
        intent="order_status",
        model="gemma-3-270m",
        metadata={"guard": "passed", "route_ms": 1.5},
    )
    Feedback.objects.create(
        conversation=conv,
        message=reply,
        kind="thumb",
        value=1,
        satisfied=True,
        minute=timezone.now(),
    )
    Conversation.objects.filter(pk=conv.pk).update(handoff=Conversation.Handoff.QUEUED)
    conv.refresh_from_db()
    return conv, reply


def test_admin_conversation_page_is_a_transcript_with_folded_metadata(admin_client: Any) -> None:
    conv, reply = _conversation_with_turns()
    page = admin_client.get(f"/admin/chatbot/conversation/{conv.pk}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    # Bubbles, not the inline table of every field.
    assert 'class="td-turn user"' in html and 'class="td-turn bot"' in html
    assert "我的订单在哪里？" in html and "您的订单 #W2611340 已发货。" in html
    assert "tabular inline-related" not in html and "message_set-0" not in html
    assert 'name="_save"' not in html  # nothing to save on a transcript
    bot = html[html.index(f'id="message-{reply.pk}"') :]
    # Metadata folded under the bubble; the thumb shown as a thumb, not 1.
    assert bot.index("<details>") < bot.index("&quot;route_ms&quot;: 1.5")
    assert "\U0001f44d" in bot[: bot.index("<details>")]


def test_admin_transcript_says_what_the_answerability_judge_decided(admin_client: Any) -> None:
    conv, _reply = _conversation_with_turns()
    judged = {"role": "large", "answers": True, "chunk": 26}
    yes = _exchange(
        conv, "rips?", "Yes, ripped knees.", tier="L2", metadata={"retrieval": {"judge": judged}}
    )
    kept = _exchange(
        conv,
        "mexico?",
        "I couldn't find that.",
        tier="L2",
        metadata={"retrieval": {"judge": judged | {"answers": False}}},
    )
    html = admin_client.get(f"/admin/chatbot/conversation/{conv.pk}/change/").content.decode()

    def bubble(m: Message) -> str:
        part = html[html.index(f'id="message-{m.pk}"') :]
        return part[: part.index("</details>")]

    assert "answered from a passage the word check refused" in bubble(yes)
    assert "the don&#x27;t-know reply was kept" in bubble(kept)
    assert "answerability judge" not in bubble(_reply)  # an L1 reply: no judge


def test_admin_conversation_list_has_preview_rating_and_handoff(admin_client: Any) -> None:
    conv, _reply = _conversation_with_turns()
    listing = admin_client.get("/admin/chatbot/conversation/")
    html = listing.content.decode()
    row = html[html.index(str(conv.public_id)) :]
    row = row[: row.index("</tr>")]
    assert "我的订单在哪里？" in row
    assert "\U0001f44d 1" in row
    assert 'alt="True"' in row  # the handoff flag: a person was asked for
    # Nobody asked for a person: no flag.
    Conversation.objects.filter(pk=conv.pk).update(handoff=Conversation.Handoff.NONE)
    html = admin_client.get("/admin/chatbot/conversation/").content.decode()
    row = html[html.index(str(conv.public_id)) :]
    assert 'alt="False"' in row[: row.index("</tr>")]


def test_admin_conversation_list_leaves_out_widgets_opened_without_a_message(
    admin_client: Any,
) -> None:
    written, _reply = _conversation_with_turns()
    opened = Conversation.objects.create()
    greeted = Conversation.objects.create()
    Message.objects.create(conversation=greeted, role=Message.Role.BOT, text="Hi!")
    html = admin_client.get("/admin/chatbot/conversation/").content.decode()
    assert str(written.public_id) in html
    assert str(opened.public_id) not in html and str(greeted.public_id) not in html
    # Still reachable: one click shows them all, and a link to one still opens it.
    everything = admin_client.get("/admin/chatbot/conversation/", {"written": "all"})
    assert str(opened.public_id) in everything.content.decode()
    assert "All, opened without a message too" in html
    assert admin_client.get(f"/admin/chatbot/conversation/{opened.pk}/change/").status_code == 200


def test_admin_message_list_has_preview_rating_and_handoff(admin_client: Any) -> None:
    conv, reply = _conversation_with_turns()
    long = _exchange(conv, "and the other one?", "word " * 60, tier="L1")
    html = admin_client.get("/admin/chatbot/message/").content.decode()
    row = html[html.index(f"/admin/chatbot/message/{reply.pk}/") :]
    row = row[: row.index("</tr>")]
    assert "您的订单 #W2611340 已发货。" in row and "\U0001f44d up" in row and 'alt="True"' in row
    row = html[html.index(f"/admin/chatbot/message/{long.pk}/") :]
    row = row[: row.index("</tr>")]
    assert " ".join(["word"] * 16) + "\u2026" in row  # on one line, cut at 80 characters
    assert "word " * 20 not in row


def test_admin_feedback_shows_up_and_down(admin_client: Any) -> None:
    from django.utils import timezone

    from chatbot.models import Feedback

    conv, reply = _conversation_with_turns()
    Feedback.objects.create(
        conversation=conv, kind="score", value=4, satisfied=True, minute=timezone.now()
    )
    html = admin_client.get("/admin/chatbot/feedback/").content.decode()
    assert "\U0001f44d up" in html and "4/5" in html
    Feedback.objects.filter(message=reply).update(value=0, satisfied=False)
    html = admin_client.get("/admin/chatbot/feedback/").content.decode()
    assert "\U0001f44e down" in html and "\U0001f44d up" not in html


def test_conversation_language_follows_its_messages() -> None:
    from chatbot.services import message_store

    conv = Conversation.objects.create()
    assert conv.language == "en"
    message_store(conversation_id=conv.pk, client_id="a", text="我的订单在哪里？")
    conv.refresh_from_db()
    assert conv.language == "zh"
    # "ok" or an order number says nothing about the language.
    message_store(conversation_id=conv.pk, client_id="b", text="ok")
    message_store(conversation_id=conv.pk, client_id="c", text="#W2611340")
    conv.refresh_from_db()
    assert conv.language == "zh"
    message_store(conversation_id=conv.pk, client_id="d", text="where is my order please")
    conv.refresh_from_db()
    assert conv.language == "en"


# -- item 13: the server's own messages in the conversation's language (EN, ZH) --------


def test_refusals_render_in_the_conversations_language() -> None:
    from chatbot.protocol import ProtocolError, frame_parse
    from chatbot.refusals import RateLimited, refusal_frame

    limited = RateLimited(reply_to="c1", message_id=3, retry_after=5, limit="session")
    en, zh = refusal_frame(limited, "en"), refusal_frame(limited, "zh")
    assert en["message"].startswith("You're sending messages too fast")
    assert zh["message"] == "您发送消息太快了；这条消息已保存，请稍后再试。"
    # Only the words change: the code and the fields are the same.
    assert {k: v for k, v in en.items() if k != "message"} == {
        k: v for k, v in zh.items() if k != "message"
    }
    with pytest.raises(ProtocolError) as caught:
        frame_parse('{"type": "message", "id": "c2", "text": "' + "x" * 5000 + '"}', None)
    assert refusal_frame(caught.value, "zh")["message"] == "消息超过 2000 个字符"
    assert refusal_frame(caught.value, "en")["message"] == "message is longer than 2000 characters"
    assert str(caught.value) == "message is longer than 2000 characters"  # logs stay English


async def test_a_chinese_conversation_gets_its_errors_in_chinese(
    seeded_shop: None, fake_models: Any
) -> None:
    comm, _hello = await connect()
    await comm.send_json_to({"type": "message", "id": "e1", "text": "   "})
    assert (await comm.receive_json_from())["message"] == "message is empty"
    await send(comm, "我的订单什么时候到？", "c1")
    await frames_until_end(comm)  # ack, the reply
    await comm.send_json_to({"type": "message", "id": "e2", "text": "   "})
    error = await comm.receive_json_from()
    assert error["code"] == "empty_message" and error["message"] == "消息为空"
    await comm.send_json_to({"type": "rate", "message_id": 999999, "value": "up"})
    error = await comm.receive_json_from()
    assert error["code"] == "unknown_message"
    assert error["message"] == "该消息不是本对话中已完成的回复"
    await comm.disconnect()


def test_admin_and_console_speak_the_browsers_language(admin_client: Any) -> None:
    conv, _reply = _conversation_with_turns()
    zh = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9"}
    page = admin_client.get(f"/admin/chatbot/conversation/{conv.pk}/change/", **zh)
    html = page.content.decode()
    assert '<html lang="zh-hans"' in html
    assert "技术细节" in html and "详情" in html  # ours
    assert "保存" in html or "历史" in html  # Django's own admin strings
    console = admin_client.get("/operators/?hours=24", **zh).content.decode()
    assert "运营控制台" in console and "最近 24 小时" in console
    assert "人工介入率" in console and "错误率（按版本）" in console  # figures and charts
    english = admin_client.get("/operators/?hours=24", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "operator console" in english and "Last 24 h" in english


# -- item 14: progress while models load, and during setup --------------------------------


def test_readyz_names_the_warm_up_stage_as_it_goes(client: Any, monkeypatch: Any) -> None:
    from inference import warmup

    fresh = warmup.Readiness()
    monkeypatch.setattr("inference.warmup.READINESS", fresh)
    monkeypatch.setattr("config.views.READINESS", fresh)
    seen: list[dict[str, Any]] = []

    def router_snapshot_get() -> None:
        # What `make run` polls while this preload runs.
        seen.append(client.get("/readyz").json())

    assert client.get("/readyz").json()["stage"] == "starting"
    warmup.warmup_run(roles=[], requests=0, preload=[router_snapshot_get])
    assert seen[0]["stage"] == "preloading router_snapshot_get" and seen[0]["ready"] is False
    done = client.get("/readyz")
    assert done.status_code == 200 and done.json()["stage"] == "ready"


def test_setup_and_run_show_progress() -> None:
    from pathlib import Path

    scripts = Path(__file__).resolve().parents[2] / "scripts"
    setup = (scripts / "setup.sh").read_text()
    pip_lines = [line for line in setup.splitlines() if "pip install" in line]
    assert pip_lines and not [line for line in pip_lines if " -q" in line]
    assert setup.count('step "') >= 6 and "compilemessages" in setup
    run = (scripts / "run.sh").read_text()
    assert '"stage"' in run and "printf" in run
