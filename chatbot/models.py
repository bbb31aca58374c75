"""Conversations and messages: the system of record for every turn."""

from __future__ import annotations

import secrets
import uuid

from django.conf import settings
from django.db import models


def new_session_key() -> str:
    # The key is the only thing that lets a client resume a conversation: 256 bits.
    return secrets.token_urlsafe(32)


class Conversation(models.Model):
    class Identity(models.TextChoices):
        NONE = "none", "not verified"
        TOKEN = "token", "shop-signed token"
        EMAIL = "email", "email in chat"
        NAME_ZIP = "name_zip", "name and zip in chat"

    class Handoff(models.TextChoices):
        NONE = "none", "bot only"
        QUEUED = "queued", "waiting for a person"
        CLAIMED = "claimed", "a person answers"
        RESOLVED = "resolved", "resolved by a person"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    session_key = models.CharField(max_length=64, unique=True, default=new_session_key)
    customer_id = models.CharField(max_length=64, blank=True, db_index=True)
    identity = models.CharField(max_length=16, choices=Identity.choices, default=Identity.NONE)
    vip = models.BooleanField(default=False)
    language = models.CharField(max_length=8, default="en")
    # Dialogue state between turns: a pending action awaiting "yes", a pending intent
    # waiting for verification. Small JSON, rewritten each turn.
    state = models.JSONField(default=dict, blank=True)
    client_ip = models.GenericIPAddressField(null=True, blank=True)
    user_agent = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Human handoff (chatbot/handoff.py, docs/desk.md): queued for a person, claimed by
    # one (the bot stays silent), resolved (the bot answers again).
    handoff = models.CharField(
        max_length=12, choices=Handoff.choices, default=Handoff.NONE, db_index=True
    )
    handoff_agent = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="handoff_conversations",
    )
    handoff_queued_at = models.DateTimeField(null=True, blank=True)
    handoff_claimed_at = models.DateTimeField(null=True, blank=True)
    handoff_first_reply_at = models.DateTimeField(null=True, blank=True)
    handoff_resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        return f"conversation {self.public_id}"


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user", "shopper"
        BOT = "bot", "bot"
        AGENT = "agent", "support agent"  # a person at the desk (human handoff)

    class Status(models.TextChoices):
        RECEIVED = "received", "received"  # a shopper message, stored
        STREAMING = "streaming", "streaming"  # a reply being written
        COMPLETE = "complete", "complete"
        INCOMPLETE = "incomplete", "cut off"  # disconnect or crash mid-reply
        ERROR = "error", "error"

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="messages"
    )
    role = models.CharField(max_length=8, choices=Role.choices)
    # The client's id for a shopper message: a resend after reconnect is not stored twice.
    client_id = models.CharField(max_length=64, blank=True)
    reply_to = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="replies"
    )
    text = models.TextField(blank=True)
    status = models.CharField(max_length=12, choices=Status.choices)
    language = models.CharField(max_length=8, blank=True)
    tier = models.CharField(max_length=12, blank=True)
    intent = models.CharField(max_length=64, blank=True)
    confidence = models.FloatField(null=True, blank=True)
    route_reason = models.JSONField(default=dict, blank=True)
    model = models.CharField(max_length=120, blank=True)
    # Bot replies: the gray-release variant ("stable"/"candidate") and the release that
    # served them (releases).
    variant = models.CharField(max_length=64, blank=True)
    release = models.ForeignKey(
        "releases.Release", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    first_chunk_ms = models.FloatField(null=True, blank=True)
    total_ms = models.FloatField(null=True, blank=True)
    # Fallback reason, fact-guard result, citations, error code, ...
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "client_id"],
                condition=~models.Q(client_id=""),
                name="message_unique_client_id",
            )
        ]
        indexes = [models.Index(fields=["conversation", "created_at"])]

    def __str__(self) -> str:
        return f"{self.role} #{self.pk}: {self.text[:40]}"


class Feedback(models.Model):
    """A shopper's rating (CSAT): thumbs on one reply, or 1-5 for the conversation.

    One row per reply (thumbs) and one per conversation (score): rating again changes
    the row. Tier, intent, variant and release are copied from the rated reply (the
    conversation's last reply for a score) so reports never depend on later edits.
    """

    class Kind(models.TextChoices):
        THUMB = "thumb", "thumbs up/down on a reply"
        SCORE = "score", "1-5 for the conversation"

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="feedback"
    )
    message = models.ForeignKey(
        Message, on_delete=models.CASCADE, related_name="feedback", null=True, blank=True
    )
    kind = models.CharField(max_length=8, choices=Kind.choices)
    # thumb: 1 up, 0 down; score: 1..5.
    value = models.PositiveSmallIntegerField()
    # Counts toward CSAT: thumbs up, or a score of 4 or 5.
    satisfied = models.BooleanField()
    tier = models.CharField(max_length=12, blank=True)
    intent = models.CharField(max_length=64, blank=True)
    variant = models.CharField(max_length=64, blank=True)
    release = models.ForeignKey(
        "releases.Release", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The metrics minute it was first counted in (a change adjusts that minute).
    minute = models.DateTimeField()
    changes = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["message"], condition=models.Q(kind="thumb"), name="feedback_one_thumb"
            ),
            models.UniqueConstraint(
                fields=["conversation"],
                condition=models.Q(kind="score"),
                name="feedback_one_score",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.value} on {self.message_id or self.conversation_id}"


class BotCheck(models.Model):
    """One message's bot-check verdict and its feature vector (docs/botcheck.md).

    Features only, never the raw events (positions, timestamps): those stay in the
    shopper's browser. Rows older than TIERDESK_BOTCHECK_RETENTION_DAYS are deleted by
    the ``chatbot.botcheck_purge`` task.
    """

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="bot_checks"
    )
    # The stored message when it was allowed; refused messages are not stored.
    message = models.ForeignKey(
        Message, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    client_id = models.CharField(max_length=64, blank=True)
    action = models.CharField(max_length=20)  # allow | challenge | refuse | refuse_connection
    reason = models.CharField(max_length=32)
    score = models.FloatField(null=True, blank=True)
    signals = models.JSONField(default=list, blank=True)
    features = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"bot check {self.action} ({self.reason})"


class AgentPresence(models.Model):
    """Whether a support agent can take a conversation (the desk keeps it current).

    Online means: status online, a desk connection open, and a heartbeat within
    TIERDESK_HANDOFF_AGENT_TIMEOUT_S. Kept here, not in the desk app, because the
    dialogue must know whether anybody can answer before it offers a person."""

    class Status(models.TextChoices):
        ONLINE = "online", "online"
        AWAY = "away", "away"

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="presence"
    )
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.ONLINE)
    connections = models.IntegerField(default=0)
    last_seen = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.user} ({self.status})"
