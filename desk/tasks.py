"""Celery beat: conversations of agents gone past the timeout go back to the queue."""

from __future__ import annotations

from asgiref.sync import async_to_sync
from celery import shared_task

from chatbot.handoff import desk_group, group_frame_sync, queue_broadcast

from .services import requeue_abandoned


@shared_task(name="desk.requeue_abandoned")
def requeue_abandoned_task() -> int:
    ids = requeue_abandoned()
    if ids:
        group_frame_sync(desk_group(), {"type": "queue_changed"})
        async_to_sync(queue_broadcast)()
    return len(ids)
