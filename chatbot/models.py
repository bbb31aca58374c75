"""Conversations and messages: the system of record for every turn."""

from __future__ import annotations

import os
import secrets
import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


def new_session_key() -> str:
    # The key is the only thing that lets a client resume a conversation: 256 bits.
    return secrets.token_urlsafe(32)


class Conversation(models.Model):
    class Identity(models.TextChoices):
        NONE = "none", _("not verified")
        TOKEN = "token", _("shop-signed token")
        EMAIL = "email", _("email in chat")
        NAME_ZIP = "name_zip", _("name and zip in chat")

    class Handoff(models.TextChoices):
        NONE = "none", _("bot only")
        QUEUED = "queued", _("waiting for a person")
        CLAIMED = "claimed", _("a person answers")
        RESOLVED = "resolved", _("resolved by a person")

    public_id = models.UUIDField(
        default=uuid.uuid4, unique=True, editable=False, verbose_name=_("public id")
    )
    session_key = models.CharField(
        max_length=64, unique=True, default=new_session_key, verbose_name=_("session key")
    )
    customer_id = models.CharField(
        max_length=64, blank=True, db_index=True, verbose_name=_("customer id")
    )
    identity = models.CharField(
        max_length=16, choices=Identity.choices, default=Identity.NONE, verbose_name=_("identity")
    )
    vip = models.BooleanField(default=False, verbose_name=_("vip"))
    language = models.CharField(max_length=8, default="en", verbose_name=_("language"))
    # Dialogue state between turns: a pending action awaiting "yes", a pending intent
    # waiting for verification. Small JSON, rewritten each turn.
    state = models.JSONField(default=dict, blank=True, verbose_name=_("state"))
    client_ip = models.GenericIPAddressField(null=True, blank=True, verbose_name=_("client ip"))
    user_agent = models.CharField(max_length=300, blank=True, verbose_name=_("user agent"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))
    # Human handoff (chatbot/handoff.py, docs/desk.md): queued for a person, claimed by
    # one (the bot stays silent), resolved (the bot answers again).
    handoff = models.CharField(
        max_length=12,
        choices=Handoff.choices,
        default=Handoff.NONE,
        db_index=True,
        verbose_name=_("handoff"),
    )
    handoff_agent = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="handoff_conversations",
        verbose_name=_("handoff agent"),
    )
    handoff_queued_at = models.DateTimeField(
        null=True, blank=True, verbose_name=_("handoff queued at")
    )
    handoff_claimed_at = models.DateTimeField(
        null=True, blank=True, verbose_name=_("handoff claimed at")
    )
    handoff_first_reply_at = models.DateTimeField(
        null=True, blank=True, verbose_name=_("handoff first reply at")
    )
    handoff_resolved_at = models.DateTimeField(
        null=True, blank=True, verbose_name=_("handoff resolved at")
    )

    class Meta:
        verbose_name = _("conversation")
        verbose_name_plural = _("conversations")
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        return f"conversation {self.public_id}"


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user", _("shopper")
        BOT = "bot", _("bot")
        AGENT = "agent", _("support agent")  # a person at the desk (human handoff)

    class Status(models.TextChoices):
        RECEIVED = "received", _("received")  # a shopper message, stored
        STREAMING = "streaming", _("streaming")  # a reply being written
        COMPLETE = "complete", _("complete")
        INCOMPLETE = "incomplete", _("cut off")  # disconnect or crash mid-reply
        ERROR = "error", _("error")

    conversation = models.ForeignKey(
        Conversation,
        on_delete=models.CASCADE,
        related_name="messages",
        verbose_name=_("conversation"),
    )
    role = models.CharField(max_length=8, choices=Role.choices, verbose_name=_("role"))
    # The client's id for a shopper message: a resend after reconnect is not stored twice.
    client_id = models.CharField(max_length=64, blank=True, verbose_name=_("client id"))
    reply_to = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="replies",
        verbose_name=_("reply to"),
    )
    text = models.TextField(blank=True, verbose_name=_("text"))
    status = models.CharField(max_length=12, choices=Status.choices, verbose_name=_("status"))
    language = models.CharField(max_length=8, blank=True, verbose_name=_("language"))
    tier = models.CharField(max_length=12, blank=True, verbose_name=_("tier"))
    intent = models.CharField(max_length=64, blank=True, verbose_name=_("intent"))
    confidence = models.FloatField(null=True, blank=True, verbose_name=_("confidence"))
    route_reason = models.JSONField(default=dict, blank=True, verbose_name=_("route reason"))
    model = models.CharField(max_length=120, blank=True, verbose_name=_("model"))
    # Bot replies: the gray-release variant ("stable"/"candidate") and the release that
    # served them (releases).
    variant = models.CharField(max_length=64, blank=True, verbose_name=_("variant"))
    release = models.ForeignKey(
        "releases.Release",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("release"),
    )
    prompt_tokens = models.PositiveIntegerField(default=0, verbose_name=_("prompt tokens"))
    completion_tokens = models.PositiveIntegerField(default=0, verbose_name=_("completion tokens"))
    first_chunk_ms = models.FloatField(null=True, blank=True, verbose_name=_("first chunk ms"))
    total_ms = models.FloatField(null=True, blank=True, verbose_name=_("total ms"))
    # Fallback reason, fact-guard result, citations, error code, ...
    metadata = models.JSONField(default=dict, blank=True, verbose_name=_("metadata"))
    created_at = models.DateTimeField(
        auto_now_add=True, db_index=True, verbose_name=_("created at")
    )
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("message")
        verbose_name_plural = _("messages")
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
        THUMB = "thumb", _("thumbs up/down on a reply")
        SCORE = "score", _("1-5 for the conversation")

    conversation = models.ForeignKey(
        Conversation,
        on_delete=models.CASCADE,
        related_name="feedback",
        verbose_name=_("conversation"),
    )
    message = models.ForeignKey(
        Message,
        on_delete=models.CASCADE,
        related_name="feedback",
        null=True,
        blank=True,
        verbose_name=_("message"),
    )
    kind = models.CharField(max_length=8, choices=Kind.choices, verbose_name=_("kind"))
    # thumb: 1 up, 0 down; score: 1..5.
    value = models.PositiveSmallIntegerField(verbose_name=_("value"))
    # Counts toward CSAT: thumbs up, or a score of 4 or 5.
    satisfied = models.BooleanField(verbose_name=_("satisfied"))
    tier = models.CharField(max_length=12, blank=True, verbose_name=_("tier"))
    intent = models.CharField(max_length=64, blank=True, verbose_name=_("intent"))
    variant = models.CharField(max_length=64, blank=True, verbose_name=_("variant"))
    release = models.ForeignKey(
        "releases.Release",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("release"),
    )
    # The metrics minute it was first counted in (a change adjusts that minute).
    minute = models.DateTimeField(verbose_name=_("minute"))
    changes = models.PositiveSmallIntegerField(default=0, verbose_name=_("changes"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("feedback")
        verbose_name_plural = _("feedbacks")
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
        Conversation,
        on_delete=models.CASCADE,
        related_name="bot_checks",
        verbose_name=_("conversation"),
    )
    # The stored message when it was allowed; refused messages are not stored.
    message = models.ForeignKey(
        Message,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("message"),
    )
    client_id = models.CharField(max_length=64, blank=True, verbose_name=_("client id"))
    action = models.CharField(
        max_length=20, verbose_name=_("action")
    )  # allow | challenge | refuse | refuse_connection
    reason = models.CharField(max_length=32, verbose_name=_("reason"))
    score = models.FloatField(null=True, blank=True, verbose_name=_("score"))
    signals = models.JSONField(default=list, blank=True, verbose_name=_("signals"))
    features = models.JSONField(default=dict, blank=True, verbose_name=_("features"))
    created_at = models.DateTimeField(
        auto_now_add=True, db_index=True, verbose_name=_("created at")
    )

    class Meta:
        verbose_name = _("bot check")
        verbose_name_plural = _("bot checks")
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"bot check {self.action} ({self.reason})"


class AgentPresence(models.Model):
    """Whether a support agent can take a conversation (the desk keeps it current).

    Online means: status online, a desk connection open, and a heartbeat within
    TIERDESK_HANDOFF_AGENT_TIMEOUT_S. Kept here, not in the desk app, because the
    dialogue must know whether anybody can answer before it offers a person."""

    class Status(models.TextChoices):
        ONLINE = "online", _("online")
        AWAY = "away", _("away")

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="presence",
        verbose_name=_("user"),
    )
    status = models.CharField(
        max_length=8, choices=Status.choices, default=Status.ONLINE, verbose_name=_("status")
    )
    connections = models.IntegerField(default=0, verbose_name=_("connections"))
    last_seen = models.DateTimeField(null=True, blank=True, verbose_name=_("last seen"))

    class Meta:
        verbose_name = _("agent presence")
        verbose_name_plural = _("agent presences")

    def __str__(self) -> str:
        return f"{self.user} ({self.status})"


def attachment_path(instance: Attachment, filename: str) -> str:
    # Never the shopper's file name: a random id, and the extension of the stored type.
    extension = os.path.splitext(filename)[1].lower()
    return f"attachments/{instance.created_at:%Y/%m}/{instance.public_id.hex}{extension}"


class Attachment(models.Model):
    """A shopper's photo (chatbot/attachments.py): type read from the bytes, stored
    re-encoded without EXIF through Django's storage API. It belongs to the shopper's
    message in the conversation (chat) or to a ticket (the desk links it); the file is
    deleted from storage whenever the row goes (retention, erase, cascade)."""

    public_id = models.UUIDField(
        default=uuid.uuid4, unique=True, editable=False, verbose_name=_("public id")
    )
    conversation = models.ForeignKey(
        Conversation,
        on_delete=models.CASCADE,
        related_name="attachments",
        verbose_name=_("conversation"),
    )
    # The shopper's message that carries the photo; none for one sent with a ticket.
    message = models.OneToOneField(
        Message,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="attachment",
        verbose_name=_("message"),
    )
    file = models.FileField(upload_to=attachment_path, max_length=200, verbose_name=_("file"))
    # The shopper's own file name, shown to them and to agents; never a storage path.
    name = models.CharField(max_length=120, blank=True, verbose_name=_("name"))
    content_type = models.CharField(max_length=40, verbose_name=_("content type"))
    size = models.PositiveIntegerField(verbose_name=_("size"))
    width = models.PositiveIntegerField(verbose_name=_("width"))
    height = models.PositiveIntegerField(verbose_name=_("height"))
    created_at = models.DateTimeField(
        default=timezone.now, db_index=True, verbose_name=_("created at")
    )

    class Meta:
        verbose_name = _("attachment")
        verbose_name_plural = _("attachments")
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"attachment {self.public_id} ({self.content_type})"
