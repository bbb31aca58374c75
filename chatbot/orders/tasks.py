"""Celery tasks of the order system: the catalogue sync from the shop's API."""

from __future__ import annotations

import logging

from celery import shared_task

logger = logging.getLogger(__name__)


@shared_task(name="orders.catalogue_sync", acks_late=True, ignore_result=True)
def catalogue_sync() -> dict[str, int]:
    """catalogue_sync.catalogue_sync on the worker; a failure is logged and the next
    run tries again (the catalogue in use stays as it was)."""
    from .catalogue_sync import CatalogueSyncError
    from .catalogue_sync import catalogue_sync as sync

    try:
        result = sync()
    except CatalogueSyncError as exc:
        logger.error("catalogue sync failed: %s", exc)
        return {"errors": 1}
    return {**result.counts(), "errors": len(result.errors)}
