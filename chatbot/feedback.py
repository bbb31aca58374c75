"""CSAT: a shopper rates a reply (thumbs) or the conversation (1-5).

Rating again changes the rating: the one row is updated and the metrics minute it
was first counted in is corrected, so a shopper who changes their mind is counted
once, with their last word.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.utils.translation import gettext_noop

from releases import clock
from releases.metrics import rating_record
from releases.models import STABLE

from .models import Feedback, Message
from .refusals import Refusal

THUMBS = {"up": 1, "down": 0}


class FeedbackError(Refusal, ValueError):
    """The rated message is not a reply of this conversation (or there is none yet)."""

    code = "unknown_message"

    def __init__(self, message: str) -> None:
        super().__init__(message)


@dataclass(frozen=True)
class Rated:
    message_id: int | None
    value: str | int
    changed: bool


def _satisfied(kind: str, value: int) -> bool:
    return value == 1 if kind == Feedback.Kind.THUMB else value >= 4


def feedback_rate(*, conversation_id: int, message_id: int | None, value: str | int) -> Rated:
    """Store (or change) a rating and count it in the release metrics."""
    # A person's messages (human handoff, tier "human") are rated like the bot's:
    # CSAT is reported for bot and human separately.
    replies = Message.objects.filter(
        conversation_id=conversation_id, role__in=[Message.Role.BOT, Message.Role.AGENT]
    ).exclude(status=Message.Status.STREAMING)
    if message_id is not None:
        kind, stored = Feedback.Kind.THUMB, THUMBS[str(value)]
        reply = replies.filter(pk=message_id).first()
        if reply is None:
            raise FeedbackError(
                gettext_noop("that message is not a finished reply in this conversation")
            )
        lookup = {"message": reply, "kind": kind}
    else:
        kind, stored = Feedback.Kind.SCORE, int(value)
        # A conversation's score is attributed to its last reply's tier, intent, variant.
        reply = replies.order_by("-created_at", "-id").first()
        if reply is None:
            raise FeedbackError(gettext_noop("there is no reply to rate yet"))
        lookup = {"conversation_id": conversation_id, "kind": kind}
    satisfied = _satisfied(kind, stored)
    for _attempt in range(2):
        try:
            with transaction.atomic():
                existing = Feedback.objects.select_for_update().filter(**lookup).first()
                if existing is not None:
                    if existing.value == stored:
                        return Rated(message_id, value, changed=False)
                    previous = existing.satisfied
                    existing.value, existing.satisfied = stored, satisfied
                    existing.changes += 1
                    existing.save()
                    rating_record(
                        minute=existing.minute,
                        release_id=existing.release_id,
                        variant=existing.variant or STABLE,
                        tier=existing.tier,
                        satisfied=satisfied,
                        previous=previous,
                    )
                    return Rated(message_id, value, changed=True)
                minute = clock.minute_floor(clock.now())
                Feedback.objects.create(
                    conversation_id=conversation_id,
                    message=reply if kind == Feedback.Kind.THUMB else None,
                    kind=kind,
                    value=stored,
                    satisfied=satisfied,
                    tier=reply.tier,
                    intent=reply.intent,
                    variant=reply.variant or STABLE,
                    release_id=reply.release_id,
                    minute=minute,
                )
                rating_record(
                    minute=minute,
                    release_id=reply.release_id,
                    variant=reply.variant or STABLE,
                    tier=reply.tier,
                    satisfied=satisfied,
                    previous=None,
                )
                return Rated(message_id, value, changed=False)
        except IntegrityError:
            continue  # a second tab rated at the same moment: update its row instead
    raise FeedbackError(gettext_noop("could not store the rating; try again"))


def conversation_ratings(*, conversation_id: int) -> tuple[dict[int, str], int | None]:
    """The thumbs per reply id ("up"/"down") and the conversation's score, for hello."""
    thumbs: dict[int, str] = {}
    score: int | None = None
    for kind, message_id, value in Feedback.objects.filter(
        conversation_id=conversation_id
    ).values_list("kind", "message_id", "value"):
        if kind == Feedback.Kind.THUMB and message_id is not None:
            thumbs[message_id] = "up" if value == 1 else "down"
        elif kind == Feedback.Kind.SCORE:
            score = value
    return thumbs, score
