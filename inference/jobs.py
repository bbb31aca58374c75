"""Enqueue a Celery task by its registered name.

A service that hands work to a worker enqueues through here instead of importing the
task module: the task's body imports the service (HackSoftware style), so importing
the task back would close an import cycle. The name (``@shared_task(name=...)``) is
the only link, and tests can replace ``task_enqueue`` to make the broker fail.
"""

from __future__ import annotations

from typing import Any

from celery import current_app


def task_enqueue(name: str, *, args: list[Any], queue: str | None = None) -> None:
    """Send ``name(*args)`` to the broker once (to ``queue``, or the default queue);
    raises if the broker can't take it (callers decide whether that is an error or
    something a sweep will redo)."""
    app = current_app
    if app.conf.task_always_eager:
        # Eager mode runs tasks in-process, which needs them registered here first.
        app.loader.import_default_modules()
        app.tasks[name].apply(args=args)
        return
    if queue:
        app.send_task(name, args=args, retry=False, queue=queue)
    else:
        app.send_task(name, args=args, retry=False)
