"""The per-session token circuit breaker (docs/product.md: 5,000 tokens per 10 minutes).

A sliding window over the conversation's stored replies: every reply row carries the
prompt and completion tokens its turn spent, whatever the tier, so the sum over the
last ``window`` is the session's usage. The database is the system of record, so every
process sees the same figure without extra shared state, and the admin's conversation
view reads the same function.

Once the sum reaches the budget the session is "tripped": the large tier is taken away
and the local small model answers, until enough of the window's tokens age out that
the sum falls below the budget again (``clears_at``). The conversation goes on; only
the tier changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F
from django.utils import timezone


@dataclass(frozen=True)
class SessionBudget:
    tokens: int
    budget: int
    window_s: int
    tripped: bool
    # When the session is tripped: when it will be below the budget again.
    clears_at: datetime | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "tokens": self.tokens,
            "budget": self.budget,
            "window_s": self.window_s,
            "tripped": self.tripped,
            "clears_at": self.clears_at.isoformat() if self.clears_at else None,
        }


@dataclass(frozen=True)
class SessionStatus:
    vip: bool
    budget: SessionBudget


def session_budget(*, conversation_id: int, now: datetime | None = None) -> SessionBudget:
    from .models import Message

    now = now or timezone.now()
    window_s = int(settings.TIERDESK_SESSION_TOKEN_WINDOW_S)
    budget = int(settings.TIERDESK_SESSION_TOKEN_BUDGET)
    since = now - timedelta(seconds=window_s)
    rows = list(
        Message.objects.filter(
            conversation_id=conversation_id, role=Message.Role.BOT, created_at__gte=since
        )
        .annotate(spent=F("prompt_tokens") + F("completion_tokens"))
        .filter(spent__gt=0)
        .order_by("created_at")
        .values_list("created_at", "spent")
    )
    total = sum(spent for _at, spent in rows)
    tripped = budget > 0 and total >= budget
    clears_at = None
    if tripped:
        remaining = total
        for created, spent in rows:
            remaining -= spent
            if remaining < budget:
                clears_at = created + timedelta(seconds=window_s)
                break
    return SessionBudget(total, budget, window_s, tripped, clears_at)


def session_status(*, conversation_id: int, vip: bool | None = None) -> SessionStatus:
    """VIP flag and token budget for one turn (one worker-thread hop). ``vip``: the
    caller has the conversation row already (the turn's planning), so it isn't read."""
    from .models import Conversation

    if vip is None:
        vip = bool(
            Conversation.objects.filter(pk=conversation_id).values_list("vip", flat=True).first()
        )
    return SessionStatus(vip=vip, budget=session_budget(conversation_id=conversation_id))
