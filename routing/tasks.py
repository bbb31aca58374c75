"""Celery tasks of the router. They take ids, re-fetch, and are idempotent."""

from __future__ import annotations

from typing import Any

from celery import shared_task


@shared_task(name="routing.router_retrain", acks_late=True, ignore_result=True)
def router_retrain(version: int) -> dict[str, Any]:
    """Retrain the intent classifier for router ``version`` and store it, so every
    process loads it on its next version check instead of training its own."""
    from routing.services import router_model_train

    return router_model_train(version=version)
