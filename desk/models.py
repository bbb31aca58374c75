"""The desk's own records: internal notes, the audit log, and tickets.

The handoff state itself (queued / claimed / resolved, the agent) is on
``chatbot.Conversation``: the chat decides from it whether the bot answers.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class AuditEvent(models.Model):
    """Who claimed, transferred, resolved or requeued which conversation, and when."""

    class Action(models.TextChoices):
        CLAIM = "claim", "claimed"
        TRANSFER = "transfer", "transferred"
        RESOLVE = "resolve", "resolved"
        REQUEUE = "requeue", "back to the queue (agent gone)"
        TICKET_REPLY = "ticket_reply", "answered a ticket by email"

    conversation = models.ForeignKey(
        "chatbot.Conversation", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    ticket = models.ForeignKey(
        "desk.Ticket", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    action = models.CharField(max_length=16, choices=Action.choices)
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        permissions = [
            ("use_desk", "Can answer shoppers at the agent desk"),
        ]

    def __str__(self) -> str:
        return f"{self.actor} {self.action} {self.conversation_id or self.ticket_id}"


class Note(models.Model):
    """An internal note on a conversation: agents see it, the shopper never does."""

    conversation = models.ForeignKey(
        "chatbot.Conversation", on_delete=models.CASCADE, related_name="desk_notes"
    )
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    text = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"note by {self.author}: {self.text[:40]}"


class Ticket(models.Model):
    """A question left when nobody could answer: stored, emailed to the shop, answered
    later by email from the desk."""

    class Status(models.TextChoices):
        OPEN = "open", "open"
        ANSWERED = "answered", "answered"

    conversation = models.ForeignKey(
        "chatbot.Conversation", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    email = models.EmailField()
    question = models.TextField()
    language = models.CharField(max_length=8, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    answer = models.TextField(blank=True)
    answered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    answered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"ticket {self.pk} from {self.email}"
