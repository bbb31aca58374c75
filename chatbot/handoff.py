"""Human handoff: a conversation queued for a person, claimed by one, resolved.

The state lives on the conversation (``Conversation.handoff``) so the chat side can
decide on its own whether the bot answers: while a person holds the conversation the
bot stays silent and the shopper's messages are relayed to the desk. The desk app
(above chatbot) calls these services; chatbot never imports the desk.

Every state change is one conditional UPDATE (``WHERE handoff = 'queued'`` for a claim),
so two agents clicking "claim" at the same moment can't both win, on PostgreSQL or
SQLite. Real-time delivery goes through the channel layer: each conversation has a
group the shopper's connection joins (``shopper_group``) and one the desk joins
(``agents_group``); the desk inbox listens on ``desk_group()``.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Count, F, Q
from django.utils import timezone
from django.utils.translation import gettext_noop

from .models import AgentPresence, Conversation, Message
from .threads import in_db_thread

logger = logging.getLogger(__name__)

H = Conversation.Handoff
HANDOFF_CLAIMED = H.CLAIMED.value
# The statuses in which the shopper's messages are for a person, not the bot.
HANDOFF_HELD = (H.QUEUED.value, H.CLAIMED.value)
HUMAN_TIER = "human"  # the tier recorded on agent messages (CSAT bot vs human)


@functools.cache
def _namespace() -> str:
    # Group names carry the database's name: deployments (or test runs) sharing one
    # Redis never see each other's conversation 1.
    name = str(settings.DATABASES["default"].get("NAME", ""))
    return hashlib.sha256(name.encode()).hexdigest()[:10]


def desk_group() -> str:
    return f"tierdesk.{_namespace()}.desk"


def shopper_group(conversation_id: int) -> str:
    return f"tierdesk.{_namespace()}.conv.{conversation_id}.shopper"


def agents_group(conversation_id: int) -> str:
    return f"tierdesk.{_namespace()}.conv.{conversation_id}.agents"


# -- business hours and presence --------------------------------------------------------------

_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_WINDOW = re.compile(r"^\s*([a-z,\-]+)\s+(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})\s*$")


def _days_parse(spec: str) -> set[int]:
    days: set[int] = set()
    for part in spec.split(","):
        if "-" in part:
            first, last = (_DAYS.index(p[:3]) for p in part.split("-", 1))
            span = range(first, last + 1) if first <= last else [*range(first, 7), *range(last + 1)]
            days.update(span)
        else:
            days.add(_DAYS.index(part[:3]))
    return days


def business_hours_parse(spec: str) -> list[tuple[set[int], time | None, time | None]]:
    """``"mon-fri 09:00-18:00; sat 10:00-14:00"`` -> (weekdays, start, end) windows.
    An end of 24:00 is None (until midnight). Raises ValueError on a malformed spec."""
    windows: list[tuple[set[int], time | None, time | None]] = []
    for chunk in spec.lower().split(";"):
        if not chunk.strip():
            continue
        match = _WINDOW.match(chunk)
        if match is None:
            raise ValueError(f"business hours {chunk.strip()!r}: use 'mon-fri 09:00-18:00'")
        days, h1, m1, h2, m2 = match.groups()
        start = time(int(h1), int(m1))
        end = None if int(h2) == 24 else time(int(h2), int(m2))
        windows.append((_days_parse(days), start, end))
    return windows


def desk_open(now: datetime | None = None) -> bool:
    """Within the shop's business hours (TIERDESK_BUSINESS_HOURS, its timezone)."""
    local = (now or timezone.now()).astimezone(ZoneInfo(settings.TIERDESK_BUSINESS_TIMEZONE))
    for days, start, end in business_hours_parse(settings.TIERDESK_BUSINESS_HOURS):
        after_start = start is not None and local.time() >= start
        if local.weekday() in days and after_start and (end is None or local.time() < end):
            return True
    return False


def _alive_since() -> datetime:
    return timezone.now() - timedelta(seconds=settings.TIERDESK_HANDOFF_AGENT_TIMEOUT_S)


def agents_online() -> int:
    """Agents with a desk open, status online and a recent heartbeat."""
    return AgentPresence.objects.filter(
        status=AgentPresence.Status.ONLINE, connections__gt=0, last_seen__gte=_alive_since()
    ).count()


@dataclass(frozen=True)
class Availability:
    available: bool
    # "closed" (outside business hours) or "nobody_online"; "" when available.
    reason: str = ""


def handoff_availability() -> Availability:
    if not desk_open():
        return Availability(False, "closed")
    if agents_online() == 0:
        return Availability(False, "nobody_online")
    return Availability(True)


def presence_connect(*, user_id: int) -> None:
    presence, _ = AgentPresence.objects.get_or_create(user_id=user_id)
    AgentPresence.objects.filter(pk=presence.pk).update(
        connections=F("connections") + 1, last_seen=timezone.now()
    )


def presence_disconnect(*, user_id: int) -> None:
    AgentPresence.objects.filter(user_id=user_id, connections__gt=0).update(
        connections=F("connections") - 1, last_seen=timezone.now()
    )


def presence_beat(*, user_id: int) -> None:
    AgentPresence.objects.filter(user_id=user_id).update(last_seen=timezone.now())


def presence_set(*, user_id: int, status: str) -> None:
    if status not in AgentPresence.Status.values:
        raise ValueError(f"unknown presence {status!r}")
    presence, _ = AgentPresence.objects.get_or_create(user_id=user_id)
    AgentPresence.objects.filter(pk=presence.pk).update(status=status, last_seen=timezone.now())


def agent_display_name(user: Any) -> str:
    return str(user.first_name or user.get_username())


# -- the queue -------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueInfo:
    position: int  # 1 = next
    wait_s: int  # estimated wait until a person answers

    def frame(self) -> dict[str, Any]:
        return {
            "type": "handoff",
            "status": H.QUEUED,
            "position": self.position,
            "wait_s": self.wait_s,
        }


def _spans(rows: Iterable[tuple[datetime | None, datetime | None]]) -> list[float]:
    """Seconds from the first to the second timestamp of each row that has both."""
    return [(end - start).total_seconds() for start, end in rows if start and end]


def handle_time_s() -> float:
    """The mean time agents held the last 50 resolved conversations (or the default)."""
    rows = list(
        Conversation.objects.filter(
            handoff_resolved_at__isnull=False, handoff_claimed_at__isnull=False
        )
        .order_by("-handoff_resolved_at")
        .values_list("handoff_claimed_at", "handoff_resolved_at")[:50]
    )
    spans = [s for s in _spans(rows) if s >= 0]
    return sum(spans) / len(spans) if spans else float(settings.TIERDESK_HANDOFF_DEFAULT_HANDLE_S)


def queue_info(*, conversation_id: int) -> QueueInfo | None:
    """Where a queued conversation stands: its place and an estimated wait (the
    conversations before it, shared among the agents online, times the handle time)."""
    queued_at = (
        Conversation.objects.filter(pk=conversation_id, handoff=H.QUEUED)
        .values_list("handoff_queued_at", flat=True)
        .first()
    )
    if queued_at is None:
        return None
    ahead = Conversation.objects.filter(handoff=H.QUEUED).filter(
        Q(handoff_queued_at__lt=queued_at) | Q(handoff_queued_at=queued_at, pk__lt=conversation_id)
    )
    position = ahead.count() + 1
    agents = max(1, agents_online())
    wait = math.ceil(position / agents) * handle_time_s()
    return QueueInfo(position=position, wait_s=round(wait))


def queue_frames() -> list[tuple[int, dict[str, Any]]]:
    """(conversation id, its ``handoff`` frame) for every queued conversation, oldest
    first: places move up as others are claimed, and the waiting widgets are told."""
    ids = list(
        Conversation.objects.filter(handoff=H.QUEUED)
        .order_by("handoff_queued_at", "pk")
        .values_list("pk", flat=True)
    )
    if not ids:
        return []
    agents, handle = max(1, agents_online()), handle_time_s()
    return [
        (pk, QueueInfo(position=n, wait_s=round(math.ceil(n / agents) * handle)).frame())
        for n, pk in enumerate(ids, 1)
    ]


async def queue_broadcast() -> None:
    for conversation_id, frame in await database_sync_to_async(queue_frames)():
        await group_frame(shopper_group(conversation_id), frame)


def handoff_queue(*, conversation_id: int) -> QueueInfo | None:
    """Put the conversation in the queue (a no-op if a person has it already)."""
    now = timezone.now()
    Conversation.objects.filter(pk=conversation_id).exclude(
        handoff__in=[H.QUEUED, H.CLAIMED]
    ).update(
        handoff=H.QUEUED,
        handoff_agent=None,
        handoff_queued_at=now,
        handoff_claimed_at=None,
        handoff_first_reply_at=None,
        handoff_resolved_at=None,
        updated_at=now,
    )
    return queue_info(conversation_id=conversation_id)


def handoff_claim(*, conversation_id: int, agent_id: int) -> bool:
    """Take a queued conversation. One conditional UPDATE: of two agents claiming at
    once exactly one changes the row; the other gets False."""
    now = timezone.now()
    won = (
        Conversation.objects.filter(pk=conversation_id, handoff=H.QUEUED).update(
            handoff=H.CLAIMED, handoff_agent_id=agent_id, handoff_claimed_at=now, updated_at=now
        )
        == 1
    )
    return won


def handoff_transfer(*, conversation_id: int, from_agent_id: int, to_agent_id: int) -> bool:
    """Hand a claimed conversation to another agent (only its holder can)."""
    return (
        Conversation.objects.filter(
            pk=conversation_id, handoff=H.CLAIMED, handoff_agent_id=from_agent_id
        ).update(handoff_agent_id=to_agent_id, updated_at=timezone.now())
        == 1
    )


def handoff_resolve(*, conversation_id: int, agent_id: int) -> bool:
    """The person is done: the bot answers the next message again."""
    now = timezone.now()
    return (
        Conversation.objects.filter(
            pk=conversation_id, handoff=H.CLAIMED, handoff_agent_id=agent_id
        ).update(handoff=H.RESOLVED, handoff_resolved_at=now, updated_at=now)
        == 1
    )


def handoff_requeue_abandoned() -> list[int]:
    """Claimed conversations whose agent has been gone longer than the timeout go back
    to the queue, keeping their original place (their queued_at)."""
    # Gone: no heartbeat (or disconnect) for the timeout. A closed desk counts from the
    # moment it closed, so a reload or a short network blip keeps the conversation.
    alive = AgentPresence.objects.filter(last_seen__gte=_alive_since()).values_list(
        "user_id", flat=True
    )
    with transaction.atomic():
        ids = list(
            Conversation.objects.select_for_update(skip_locked=True)
            .filter(handoff=H.CLAIMED)
            .exclude(handoff_agent_id__in=list(alive))
            .values_list("pk", flat=True)
        )
        if ids:
            Conversation.objects.filter(pk__in=ids, handoff=H.CLAIMED).update(
                handoff=H.QUEUED, handoff_agent=None, handoff_claimed_at=None
            )
    return ids


def handoff_status(*, conversation_id: int) -> dict[str, Any] | None:
    """The shopper's view of the handoff (for ``hello``): queued with its place, or the
    person who answers; None when the bot answers."""
    row = (
        Conversation.objects.filter(pk=conversation_id)
        .values("handoff", "handoff_agent__first_name", "handoff_agent__username")
        .first()
    )
    if row is None or row["handoff"] in (H.NONE, H.RESOLVED):
        return None
    if row["handoff"] == H.QUEUED:
        info = queue_info(conversation_id=conversation_id)
        return info.frame() if info else None
    name = row["handoff_agent__first_name"] or row["handoff_agent__username"] or ""
    return {"type": "handoff", "status": H.CLAIMED, "agent": name}


def disliked_question(*, conversation_id: int, before_id: int) -> str:
    """The shopper's question whose answer (the last reply before ``before_id``) they
    rated thumbs-down; "" if the last reply was not rated down."""
    from .models import Feedback

    reply = (
        Message.objects.filter(
            conversation_id=conversation_id, role=Message.Role.BOT, id__lt=before_id
        )
        .order_by("-id")
        .values("id", "reply_to__text")
        .first()
    )
    if reply is None:
        return ""
    down = Feedback.objects.filter(
        message_id=reply["id"], kind=Feedback.Kind.THUMB, satisfied=False
    ).exists()
    return str(reply["reply_to__text"] or "") if down else ""


def human_holds(*, conversation_id: int) -> str:
    """The conversation's handoff status ("none", "queued", "claimed", "resolved")."""
    status = (
        Conversation.objects.filter(pk=conversation_id).values_list("handoff", flat=True).first()
    )
    return str(status or H.NONE)


# -- messages from the person ----------------------------------------------------------------


def agent_message_store(
    *, conversation_id: int, agent_id: int, text: str, agent_name: str
) -> Message | None:
    """Store an agent's message (role agent), if that agent holds the conversation.
    Stored before it is relayed: a shopper who reloads sees it in the history."""
    now = timezone.now()
    with transaction.atomic():
        held = (
            Conversation.objects.select_for_update()
            .filter(pk=conversation_id, handoff=H.CLAIMED, handoff_agent_id=agent_id)
            .first()
        )
        if held is None:
            return None
        message = Message.objects.create(
            conversation_id=conversation_id,
            role=Message.Role.AGENT,
            text=text,
            status=Message.Status.COMPLETE,
            language=held.language,
            tier=HUMAN_TIER,
            intent="handoff",
            metadata={"agent": agent_name, "agent_id": agent_id},
        )
        fields: dict[str, Any] = {"updated_at": now}
        if held.handoff_first_reply_at is None:
            fields["handoff_first_reply_at"] = now
        Conversation.objects.filter(pk=conversation_id).update(**fields)
    return message


# -- channel layer ---------------------------------------------------------------------------


async def group_frame(group: str, frame: dict[str, Any]) -> None:
    """Send a frame to every connection in a group; a channel-layer outage is logged,
    never raised (the message is stored: a reload shows it)."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        await layer.group_send(group, {"type": "relay.frame", "frame": frame})
    except Exception:
        logger.warning("could not relay a frame to %s", group, exc_info=True)


def group_frame_sync(group: str, frame: dict[str, Any]) -> None:
    async_to_sync(group_frame)(group, frame)


def message_frame(message: Message, *, name: str = "") -> dict[str, Any]:
    """A stored message as the desk and the widget show it."""
    frame: dict[str, Any] = {
        "type": "message",
        "conversation": message.conversation_id,
        "message_id": message.pk,
        "role": message.role,
        "text": message.text,
        "created": message.created_at.isoformat(),
    }
    if name:
        frame["agent"] = name
    return frame


async def handoff_relay(*, conversation_id: int, message: Message, relay: bool) -> str:
    """A shopper's stored message while the conversation is queued or claimed goes to
    the desk (``relay``: only the first time it is stored). Returns the handoff status."""
    status = await in_db_thread(human_holds)(conversation_id=conversation_id)
    if relay and status in (H.QUEUED, H.CLAIMED):
        await group_frame(agents_group(conversation_id), message_frame(message))
        if status == H.QUEUED:
            await desk_changed()
    return status


async def desk_changed() -> None:
    """Tell every open desk that the queue changed (they re-read it)."""
    await group_frame(desk_group(), {"type": "queue_changed"})


# -- figures (operator console, Prometheus) ------------------------------------------------


@dataclass(frozen=True)
class HandoffFigures:
    conversations: int
    handed_off: int
    intervention_rate: float | None
    first_reply_s: float | None  # mean, queued -> first message of the person
    handle_s: float | None  # mean, claimed -> resolved
    csat_bot: float | None
    csat_human: float | None
    ratings_bot: int
    ratings_human: int
    queued_now: int
    agents_online: int


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 1) if values else None


def handoff_figures(*, since: datetime | None = None) -> HandoffFigures:
    from .models import Feedback

    conversations = Conversation.objects.all()
    if since is not None:
        conversations = conversations.filter(created_at__gte=since)
    total = conversations.count()
    handed = conversations.filter(handoff_queued_at__isnull=False)
    firsts = _spans(handed.values_list("handoff_queued_at", "handoff_first_reply_at"))
    handles = _spans(handed.values_list("handoff_claimed_at", "handoff_resolved_at"))
    feedback = Feedback.objects.all()
    if since is not None:
        feedback = feedback.filter(created_at__gte=since)
    by_tier = feedback.values("tier").annotate(
        n=Count("id"), ok=Count("id", filter=Q(satisfied=True))
    )
    human_n = human_ok = bot_n = bot_ok = 0
    for row in by_tier:
        if row["tier"] == HUMAN_TIER:
            human_n, human_ok = human_n + row["n"], human_ok + row["ok"]
        else:
            bot_n, bot_ok = bot_n + row["n"], bot_ok + row["ok"]
    handed_n = handed.count()
    return HandoffFigures(
        conversations=total,
        handed_off=handed_n,
        intervention_rate=round(handed_n / total, 4) if total else None,
        first_reply_s=_mean(firsts),
        handle_s=_mean(handles),
        csat_bot=round(bot_ok / bot_n, 4) if bot_n else None,
        csat_human=round(human_ok / human_n, 4) if human_n else None,
        ratings_bot=bot_n,
        ratings_human=human_n,
        queued_now=Conversation.objects.filter(handoff=H.QUEUED).count(),
        agents_online=agents_online(),
    )


def agents_list() -> list[dict[str, Any]]:
    """Every agent (the desk's transfer menu), with presence."""
    from django.contrib.auth.models import Group

    user_model = get_user_model()
    group = Group.objects.filter(name=AGENTS_GROUP).first()
    users = user_model.objects.filter(groups=group, is_active=True)
    alive = set(
        AgentPresence.objects.filter(
            status=AgentPresence.Status.ONLINE, connections__gt=0, last_seen__gte=_alive_since()
        ).values_list("user_id", flat=True)
    )
    return [
        {"id": u.pk, "name": agent_display_name(u), "online": u.pk in alive}
        for u in users.order_by("username")
    ]


AGENTS_GROUP = "support agents"


def handoff_series(
    *, since: datetime, until: datetime, buckets: int = 24
) -> dict[str, list[tuple[datetime, float | None]]]:
    """Per time bucket: the human intervention rate, and the mean minutes to the first
    human reply (operator console charts). None where a bucket has no data."""
    step = (until - since) / buckets
    starts = [since + step * i for i in range(buckets)]
    rows = list(
        Conversation.objects.filter(created_at__gte=since, created_at__lt=until).values_list(
            "created_at", "handoff_queued_at", "handoff_first_reply_at"
        )
    )
    totals = [0] * buckets
    handed = [0] * buckets
    waits: list[list[float]] = [[] for _ in range(buckets)]
    for created, queued, first in rows:
        i = min(buckets - 1, int((created - since) / step))
        totals[i] += 1
        if queued is not None:
            handed[i] += 1
            if first is not None:
                waits[i].append((first - queued).total_seconds() / 60)
    return {
        # The keys are msgids: the console shows them translated.
        gettext_noop("intervention rate"): [
            (start, handed[i] / totals[i] if totals[i] else None) for i, start in enumerate(starts)
        ],
        gettext_noop("first human reply (min)"): [
            (start, sum(waits[i]) / len(waits[i]) if waits[i] else None)
            for i, start in enumerate(starts)
        ],
    }
