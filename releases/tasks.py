"""Celery tasks of the gray release. They take ids, re-fetch, and are idempotent."""

from __future__ import annotations

from typing import Any

from celery import shared_task


@shared_task(name="releases.release_tick", acks_late=True, ignore_result=True)
def release_tick() -> dict[str, Any]:
    """Celery beat, every TIERDESK_RELEASE_TICK_S: guardrails, promotion, schedule step
    for the running candidate. Idempotent: a duplicate run in the same minute writes one
    more decision row and changes nothing else (a step is due once per interval)."""
    from releases.decisions import release_tick as tick

    return tick()


@shared_task(name="releases.release_check", acks_late=True, ignore_result=True)
def release_check(release_id: int) -> dict[str, Any]:
    """The same for one release by id (e.g. an operator's "check now")."""
    from releases.decisions import release_check as check

    return check(release_id=release_id)
