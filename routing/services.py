"""Writes for the router's trained state: the retrain that the Celery task runs, and
its enqueueing after an admin's change commits."""

from __future__ import annotations

import logging
import socket
import time
from typing import Any

from routing.classifier import (
    classifier_samples,
    classifier_samples_hash,
    classifier_store,
    classifier_train,
)
from routing.models import ClassifierModel
from routing.versioning import router_version_get

logger = logging.getLogger(__name__)

# Stored models kept for rollback and inspection; older rows are deleted.
KEEP_MODELS = 5


def router_model_train(*, version: int, trained_by: str = "") -> dict[str, Any]:
    """Train and store the classifier for the router data of ``version``.

    Idempotent: a task for a version that is no longer current does nothing (the
    newer version's task follows), and data that already has a stored model (a rule
    edit, a duplicate message, a redelivery) is not trained again.
    """
    current = router_version_get()
    if current.version > version:
        return {"outcome": "superseded", "version": version, "current": current.version}
    started = time.perf_counter()
    samples = classifier_samples()
    data_hash = classifier_samples_hash(samples)
    existing = ClassifierModel.objects.filter(data_hash=data_hash).first()
    if existing is not None:
        if existing.router_version < current.version:
            ClassifierModel.objects.filter(pk=existing.pk).update(router_version=current.version)
        return {"outcome": "unchanged", "version": current.version, "model_id": existing.pk}
    if len({intent for _, intent in samples}) < 2:
        return {"outcome": "too_little_data", "version": current.version}
    classifier = classifier_train(samples=samples)
    row = classifier_store(
        classifier=classifier,
        router_version=current.version,
        trained_by=trained_by or f"celery:{socket.gethostname()}",
    )
    stale = ClassifierModel.objects.order_by("-router_version", "-id").values_list("pk", flat=True)[
        KEEP_MODELS:
    ]
    ClassifierModel.objects.filter(pk__in=list(stale)).delete()
    logger.info(
        "router_retrain: v%s trained on %d examples in %.2f s (%d bytes)",
        current.version,
        classifier.sample_count,
        classifier.train_seconds,
        row.size_bytes,
    )
    return {
        "outcome": "trained",
        "version": current.version,
        "model_id": row.pk,
        "samples": classifier.sample_count,
        "train_seconds": round(classifier.train_seconds, 3),
        "total_seconds": round(time.perf_counter() - started, 3),
    }
