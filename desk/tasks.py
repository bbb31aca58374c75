"""Celery beat: conversations of agents gone past the timeout go back to the queue."""

from __future__ import annotations

from celery import shared_task

from chatbot.handoff import desk_group, group_frame_sync

from .services import requeue_abandoned


@shared_task(name="desk.requeue_abandoned")
def requeue_abandoned_task() -> int:
    ids = requeue_abandoned()
    if ids:
        group_frame_sync(desk_group(), {"type": "queue_changed"})
    return len(ids)
