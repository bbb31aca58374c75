"""The classifier is trained once, by the routing.router_retrain Celery task, stored in
the database, and loaded (not retrained) by every process after an admin's change."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test import override_settings

from routing import classifier_store as store_module
from routing import versioning
from routing.classifier_store import classifier_deserialize, classifier_get
from routing.classifier_training import classifier_samples_hash
from routing.models import ClassifierModel, Intent, Utterance
from routing.router import route_message
from routing.services import router_model_train
from routing.tasks import router_retrain
from routing.types import L1
from routing.versioning import router_retrain_enqueue

pytestmark = pytest.mark.usefixtures("seeded")

PICKUP = [
    ("can i pick up my order in the store", "en"),
    ("store pickup available?", "en"),
    ("collect it myself from your shop", "en"),
    ("do you do click and collect", "en"),
    ("门店自提可以吗", "zh"),
    ("我想自己去店里取", "zh"),
]


def _add_pickup_intent() -> None:
    intent = Intent.objects.create(name="store_pickup", tier=L1)
    for text, language in PICKUP:
        Utterance.objects.create(intent=intent, language=language, text=text)


def test_task_trains_stores_and_is_idempotent() -> None:
    version = versioning.router_version_get().version
    first = router_retrain.apply(args=[version]).get()
    assert first["outcome"] in {"trained", "unchanged"}
    row = ClassifierModel.objects.get(
        data_hash=classifier_samples_hash(store_module.classifier_samples())
    )
    assert row.sample_count > 1000 and row.train_seconds > 0 and row.size_bytes == len(row.blob)
    assert classifier_deserialize(bytes(row.blob)).data_hash == row.data_hash

    # Again (a redelivery, or a second bump in the same transaction): nothing is trained.
    again = router_retrain.apply(args=[version]).get()
    assert again["outcome"] == "unchanged" and again["model_id"] == row.pk
    assert ClassifierModel.objects.count() == 1


def test_task_for_an_old_version_does_nothing() -> None:
    old = versioning.router_version_get().version
    _add_pickup_intent()
    assert router_model_train(version=old)["outcome"] == "superseded"


def test_processes_load_the_stored_model_instead_of_training(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert classifier_get() is not None  # this process's model for the seed data
    _add_pickup_intent()
    outcome = router_model_train(version=versioning.router_version_get().version)
    assert outcome["outcome"] == "trained" and outcome["train_seconds"] > 0

    def no_training(**_: object) -> None:
        raise AssertionError("a process must load the stored model, not train")

    monkeypatch.setattr(store_module, "classifier_train", no_training)
    versioning.router_caches_expire()
    decision = route_message(text="could i collect it at the shop myself", language="en")
    assert decision.intent == "store_pickup", decision.reason


def test_while_the_task_runs_the_previous_model_answers(
    monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    before = classifier_get()  # synchronous: the model for exactly this test's data
    assert before is not None
    settings.TIERDESK_ROUTER_RETRAIN_ASYNC = True
    settings.TIERDESK_ROUTER_RETRAIN_GRACE_S = 60
    _add_pickup_intent()
    trained: list[int] = []
    real_train = store_module.classifier_train

    def counting_train(**kwargs: Any) -> Any:
        trained.append(1)
        return real_train(**kwargs)

    monkeypatch.setattr(store_module, "classifier_train", counting_train)
    versioning.router_caches_expire()
    assert classifier_get() is before  # pending: no stored model yet, no local training
    assert not trained

    # The broker stayed down past the grace period: this process trains it itself.
    monkeypatch.setattr(store_module.time, "monotonic", lambda: time.time() + 3600)
    versioning.router_caches_expire()
    after = classifier_get()
    assert after is not before and after is not None and "store_pickup" in after.intents
    assert trained == [1]
    assert ClassifierModel.objects.filter(data_hash=after.data_hash).exists()


@override_settings(TIERDESK_ROUTER_RETRAIN_ASYNC=True)
def test_an_admin_edit_enqueues_the_task_after_commit(
    monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks
) -> None:
    from config.celery import app

    sent: list[tuple[list[int], dict[str, object]]] = []

    def send_task(name: str, args: list[int], **kw: object) -> None:
        assert name == router_retrain.name
        sent.append((args, kw))

    monkeypatch.setattr(app, "send_task", send_task)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        Utterance.objects.create(
            intent=Intent.objects.get(name="greeting"), language="en", text="howdy partner"
        )
        assert sent == []  # nothing before the commit
    for callback in callbacks:
        callback()
    version = versioning.router_version_get().version
    assert [args for args, _ in sent] == [[version]]


@override_settings(TIERDESK_ROUTER_RETRAIN_ASYNC=True)
def test_a_broker_that_is_down_does_not_break_the_admin(monkeypatch: pytest.MonkeyPatch) -> None:
    def down(*_: object, **__: object) -> None:
        raise ConnectionError("redis is down")

    from config.celery import app

    monkeypatch.setattr(app, "send_task", down)
    router_retrain_enqueue(version=1)  # logged, not raised


@pytest.mark.django_db(transaction=True)
def test_a_real_celery_worker_picks_up_the_task(seeded: dict[str, int]) -> None:
    """A `celery -A config worker` subprocess on the test database and REDIS_URL,
    on a queue of its own so no other worker can take the message."""
    redis_url = os.environ.get("REDIS_URL", "")
    if connection.vendor != "postgresql" or not redis_url.startswith("redis://"):
        pytest.skip("needs PostgreSQL and Redis (scripts/pytest.sh)")
    ClassifierModel.objects.all().delete()
    version = versioning.router_version_get().version
    queue = f"router-test-{uuid.uuid4().hex[:8]}"
    db = connection.settings_dict
    env = dict(
        os.environ,
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        TIERDESK_TEST_DB_NAME="",
        CELERY_BROKER_URL=redis_url,
    )
    root = Path(__file__).resolve().parents[2]
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "-Q",
            queue,
            "--pool",
            "solo",
            "--without-heartbeat",
            "--without-gossip",
            "--without-mingle",
            "-n",
            f"{queue}@%h",
            "--loglevel",
            "INFO",
        ],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        router_retrain.apply_async(args=[version], queue=queue)
        deadline = time.monotonic() + 90
        row = None
        while time.monotonic() < deadline and row is None:
            row = ClassifierModel.objects.filter(router_version=version).first()
            if worker.poll() is not None:
                break
            time.sleep(0.5)
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        try:
            output, _ = worker.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            output, _ = worker.communicate(timeout=5)
    log = output.decode(errors="replace")
    assert row is not None, log[-3000:]
    assert row.trained_by.startswith("celery:") and row.train_seconds > 0
    assert "routing.router_retrain" in log and "succeeded" in log, log[-3000:]
