"""The desk's own records: internal notes, the audit log, and tickets.

The handoff state itself (queued / claimed / resolved, the agent) is on
``chatbot.Conversation``: the chat decides from it whether the bot answers.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class AuditEvent(models.Model):
    """Who claimed, transferred, resolved or requeued which conversation, and when."""

    class Action(models.TextChoices):
        CLAIM = "claim", _("claimed")
        TRANSFER = "transfer", _("transferred")
        RESOLVE = "resolve", _("resolved")
        REQUEUE = "requeue", _("back to the queue (agent gone)")
        TICKET_REPLY = "ticket_reply", _("answered a ticket by email")

    conversation = models.ForeignKey(
        "chatbot.Conversation",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("conversation"),
    )
    ticket = models.ForeignKey(
        "desk.Ticket",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("ticket"),
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("actor"),
    )
    action = models.CharField(max_length=16, choices=Action.choices, verbose_name=_("action"))
    detail = models.JSONField(default=dict, blank=True, verbose_name=_("detail"))
    created_at = models.DateTimeField(
        auto_now_add=True, db_index=True, verbose_name=_("created at")
    )

    class Meta:
        verbose_name = _("audit event")
        verbose_name_plural = _("audit events")
        ordering = ["-created_at", "-id"]
        permissions = [
            ("use_desk", "Can answer shoppers at the agent desk"),
        ]

    def __str__(self) -> str:
        return f"{self.actor} {self.action} {self.conversation_id or self.ticket_id}"


class Note(models.Model):
    """An internal note on a conversation: agents see it, the shopper never does."""

    conversation = models.ForeignKey(
        "chatbot.Conversation",
        on_delete=models.CASCADE,
        related_name="desk_notes",
        verbose_name=_("conversation"),
    )
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("author"),
    )
    text = models.TextField(verbose_name=_("text"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("note")
        verbose_name_plural = _("notes")
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"note by {self.author}: {self.text[:40]}"


class Ticket(models.Model):
    """A question left when nobody could answer: stored, emailed to the shop, answered
    later by email from the desk."""

    class Status(models.TextChoices):
        OPEN = "open", _("open")
        ANSWERED = "answered", _("answered")

    conversation = models.ForeignKey(
        "chatbot.Conversation",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("conversation"),
    )
    email = models.EmailField(verbose_name=_("email"))
    question = models.TextField(verbose_name=_("question"))
    language = models.CharField(max_length=8, blank=True, verbose_name=_("language"))
    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.OPEN, verbose_name=_("status")
    )
    answer = models.TextField(blank=True, verbose_name=_("answer"))
    answered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("answered by"),
    )
    answered_at = models.DateTimeField(null=True, blank=True, verbose_name=_("answered at"))
    # Photos the shopper attached in the ticket form (deleted with the ticket:
    # desk/privacy.py).
    attachments = models.ManyToManyField(
        "chatbot.Attachment", blank=True, related_name="tickets", verbose_name=_("photos")
    )
    created_at = models.DateTimeField(
        auto_now_add=True, db_index=True, verbose_name=_("created at")
    )

    class Meta:
        verbose_name = _("ticket")
        verbose_name_plural = _("tickets")
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"ticket {self.pk} from {self.email}"
