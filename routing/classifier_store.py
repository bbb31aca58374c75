"""The stored classifier: trained once (by the retrain task, or by a process that
finds none), stored in the database, loaded by every process."""

from __future__ import annotations

import logging
import os
import pickle
import time
import zlib
from collections.abc import Hashable

import sklearn
from django.conf import settings

from inference.versioned import BuildPending, VersionedCache
from routing.classifier import TrainedClassifier
from routing.classifier_training import (
    classifier_samples,
    classifier_samples_hash,
    classifier_train,
)
from routing.models import ClassifierModel
from routing.versioning import ROUTER_VERSION

logger = logging.getLogger(__name__)


def classifier_serialize(classifier: TrainedClassifier) -> bytes:
    return zlib.compress(pickle.dumps(classifier, protocol=pickle.HIGHEST_PROTOCOL), 3)


def classifier_deserialize(blob: bytes) -> TrainedClassifier:
    # Only rows written by classifier_store (our own code) are ever loaded.
    classifier = pickle.loads(zlib.decompress(blob))
    if not isinstance(classifier, TrainedClassifier):
        raise TypeError(f"not a TrainedClassifier: {type(classifier).__name__}")
    return classifier


def classifier_stored_get(*, data_hash: str) -> TrainedClassifier | None:
    """The stored model for this training data, if one was trained by this
    scikit-learn version (a pickle must not cross versions)."""
    row = (
        ClassifierModel.objects.filter(data_hash=data_hash, sklearn_version=sklearn.__version__)
        .only("blob")
        .first()
    )
    if row is None:
        return None
    return classifier_deserialize(bytes(row.blob))


def classifier_store(
    *, classifier: TrainedClassifier, router_version: int, trained_by: str
) -> ClassifierModel:
    """Store a trained model (idempotent: the same data stores one row)."""
    blob = classifier_serialize(classifier)
    row, created = ClassifierModel.objects.get_or_create(
        data_hash=classifier.data_hash,
        defaults={
            "router_version": router_version,
            "sample_count": classifier.sample_count,
            "intent_count": len(classifier.intents),
            "train_seconds": classifier.train_seconds,
            "trained_at": classifier.trained_at,
            "trained_by": trained_by[:128],
            "sklearn_version": sklearn.__version__,
            "size_bytes": len(blob),
            "blob": blob,
        },
    )
    if not created and (
        row.router_version < router_version or row.sklearn_version != sklearn.__version__
    ):
        ClassifierModel.objects.filter(pk=row.pk).update(
            router_version=max(router_version, row.router_version),
            sklearn_version=sklearn.__version__,
            size_bytes=len(blob),
            blob=blob,
        )
    return row


# When this process first saw training data it had no stored model for (monotonic s).
_pending_since: dict[str, float] = {}


def _classifier_build(
    previous: TrainedClassifier | None, version: Hashable
) -> TrainedClassifier | None:
    """Load the stored model for the current data; train only as a last resort.

    - same data as the model in hand (a rule edit): keep it;
    - a stored model for this data (the retrain task ran): load it (~50 ms);
    - none yet, and this process has a model: keep serving it while the task runs,
      for at most ``TIERDESK_ROUTER_RETRAIN_GRACE_S`` (then the broker is presumably
      down, and the process trains and stores the model itself);
    - none, and nothing in hand (first start, or the task is off): train and store.
    """
    samples = classifier_samples()
    data_hash = classifier_samples_hash(samples)
    if previous is not None and previous.data_hash == data_hash:
        return previous
    if len({intent for _, intent in samples}) < 2:
        return None
    stored = classifier_stored_get(data_hash=data_hash)
    if stored is not None:
        _pending_since.pop(data_hash, None)
        return stored
    if previous is not None and settings.TIERDESK_ROUTER_RETRAIN_ASYNC:
        since = _pending_since.setdefault(data_hash, time.monotonic())
        if time.monotonic() - since < settings.TIERDESK_ROUTER_RETRAIN_GRACE_S:
            raise BuildPending("waiting for the router_retrain task's model")
        logger.warning(
            "no stored classifier %.0f s after the change: training in this process",
            time.monotonic() - since,
        )
    classifier = classifier_train(samples=samples)
    _pending_since.pop(data_hash, None)
    from routing.versioning import router_version_get

    try:
        classifier_store(
            classifier=classifier,
            router_version=router_version_get().version,
            trained_by=f"process:{os.getpid()}",
        )
    except Exception:
        # Storing only spares other processes the training; routing goes on.
        logger.exception("could not store the classifier this process trained")
    return classifier


_cache: VersionedCache[TrainedClassifier | None] = VersionedCache(
    name="intent classifier", source=ROUTER_VERSION, build=_classifier_build
)


def classifier_get() -> TrainedClassifier | None:
    """The classifier for the current router data, or None when there is too little
    data to train one. Loads the stored model after a change (see _classifier_build)."""
    return _cache.get()
