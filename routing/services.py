"""Writes for the router's trained state: the retrain that the Celery task runs, and
its enqueueing after an admin's change commits."""

from __future__ import annotations

import logging
import socket
import time
from typing import Any

from django.utils import timezone

from routing.classifier_store import classifier_store
from routing.classifier_training import (
    classifier_samples,
    classifier_samples_hash,
    classifier_train,
)
from routing.models import ClassifierModel, RetrainRun
from routing.versioning import router_version_get

logger = logging.getLogger(__name__)

# Stored models kept for rollback and inspection; older rows are deleted.
KEEP_MODELS = 5


def retrain_run_record(version: int, **fields: Any) -> None:
    """Create or update the progress row of ``version``'s retraining (shown in admin).
    Progress is only shown, so a failure to record it never stops the training."""
    try:
        RetrainRun.objects.update_or_create(router_version=version, defaults=fields)
    except Exception:
        logger.exception("could not record retrain progress for v%s", version)


def router_model_train(*, version: int, trained_by: str = "") -> dict[str, Any]:
    """Train and store the classifier for the router data of ``version``.

    Idempotent: a task for a version that is no longer current does nothing (the
    newer version's task follows), and data that already has a stored model (a rule
    edit, a duplicate message, a redelivery) is not trained again. Its progress is
    recorded in ``RetrainRun`` for the admin.
    """
    current = router_version_get()
    if current.version > version:
        retrain_run_record(
            version,
            status=RetrainRun.SUPERSEDED,
            stage=f"v{current.version} is current",
            finished_at=timezone.now(),
        )
        return {"outcome": "superseded", "version": version, "current": current.version}
    started = time.perf_counter()
    retrain_run_record(
        current.version,
        status=RetrainRun.TRAINING,
        stage="reading the examples",
        progress=0.0,
        started_at=timezone.now(),
    )
    samples = classifier_samples()
    skipped = _training_skip(current.version, samples)
    if skipped is not None:
        return skipped
    return _train_and_store(current.version, samples, trained_by=trained_by, started=started)


def _training_skip(version: int, samples: list[tuple[str, str]]) -> dict[str, Any] | None:
    """The outcome when there is nothing to train: a stored model has these examples
    already, or they cover fewer than two intents; None: train."""
    data_hash = classifier_samples_hash(samples)
    existing = ClassifierModel.objects.filter(data_hash=data_hash).first()
    if existing is not None:
        if existing.router_version < version:
            ClassifierModel.objects.filter(pk=existing.pk).update(router_version=version)
        retrain_run_record(
            version,
            status=RetrainRun.UNCHANGED,
            stage="same examples as a stored model",
            progress=1.0,
            finished_at=timezone.now(),
        )
        return {"outcome": "unchanged", "version": version, "model_id": existing.pk}
    if len({intent for _, intent in samples}) < 2:
        retrain_run_record(
            version,
            status=RetrainRun.FAILED,
            stage="examples for fewer than two intents",
            finished_at=timezone.now(),
        )
        return {"outcome": "too_little_data", "version": version}
    return None


def _train_and_store(
    version: int, samples: list[tuple[str, str]], *, trained_by: str, started: float
) -> dict[str, Any]:
    """Train, store (keeping the newest KEEP_MODELS models) and record the outcome."""

    def progress(stage: str, share: float) -> None:
        retrain_run_record(version, stage=stage, progress=round(share, 3))

    try:
        classifier = classifier_train(samples=samples, progress=progress)
    except Exception as exc:
        retrain_run_record(
            version,
            status=RetrainRun.FAILED,
            stage=f"{type(exc).__name__}: {exc}"[:200],
            finished_at=timezone.now(),
        )
        raise
    row = classifier_store(
        classifier=classifier,
        router_version=version,
        trained_by=trained_by or f"celery:{socket.gethostname()}",
    )
    stale = ClassifierModel.objects.order_by("-router_version", "-id").values_list("pk", flat=True)[
        KEEP_MODELS:
    ]
    ClassifierModel.objects.filter(pk__in=list(stale)).delete()
    logger.info(
        "router_retrain: v%s trained on %d examples in %.2f s (%d bytes)",
        version,
        classifier.sample_count,
        classifier.train_seconds,
        row.size_bytes,
    )
    result = {
        "outcome": "trained",
        "version": version,
        "model_id": row.pk,
        "samples": classifier.sample_count,
        "train_seconds": round(classifier.train_seconds, 3),
        "total_seconds": round(time.perf_counter() - started, 3),
    }
    retrain_run_record(
        version,
        status=RetrainRun.DONE,
        stage=f"trained on {classifier.sample_count} examples",
        progress=1.0,
        finished_at=timezone.now(),
        result=result,
    )
    return result


def retrain_status() -> dict[str, Any]:
    """For the admin: the current version, whether a stored model matches the current
    examples, and whether a retrain is queued or running."""
    current = router_version_get()
    samples = classifier_samples()
    data_hash = classifier_samples_hash(samples)
    model = ClassifierModel.objects.filter(data_hash=data_hash).first()
    running = RetrainRun.objects.filter(
        status__in=[RetrainRun.QUEUED, RetrainRun.TRAINING],
        router_version__gte=current.version - 50,
    ).exists()
    calibration = None
    if model is not None:
        from django.conf import settings

        from routing.classifier_store import classifier_deserialize

        classifier = classifier_deserialize(bytes(model.blob))
        calibration = classifier.calibration
        if calibration is not None:
            from routing.models import OutOfScopePoint

            chosen = OutOfScopePoint.objects.first()
            # What the router applies (routing.router._threshold): a chosen point, else
            # the shop's own calibrated point, else the setting.
            scorer = classifier.oos_scorer
            if chosen is not None:
                threshold = chosen.threshold
            elif scorer is not None:
                threshold = scorer.threshold
            else:
                threshold = settings.TIERDESK_ROUTER_CLARIFY_THRESHOLD
            calibration = {
                **calibration,
                "configured_threshold": threshold,
                "chosen": chosen,
                "shop_calibrated": scorer is not None,
                # The curve's point nearest the configured threshold (the grid's step
                # is 0.025), marked in the table.
                "configured_point": min(
                    (p["threshold"] for p in calibration["curve"]),
                    key=lambda t: abs(t - threshold),
                ),
            }
    return {
        "calibration": calibration,
        "version": current.version,
        "examples": len(samples),
        "intents": len({intent for _, intent in samples}),
        "model": model,
        "up_to_date": model is not None,
        "running": running and model is None,
    }


def router_retrain_now() -> str:
    """The admin's "retrain now": enqueue the task (or, with retraining in-process,
    train here) for the current version."""
    from django.conf import settings

    from routing.versioning import router_retrain_enqueue

    version = router_version_get().version
    if settings.TIERDESK_ROUTER_RETRAIN_ASYNC:
        router_retrain_enqueue(version=version)
        return f"queued for v{version}"
    return str(router_model_train(version=version, trained_by="admin")["outcome"])
