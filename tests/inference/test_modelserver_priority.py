"""The model server loads each role from a thread at the role's priority.

Every thread llama.cpp starts for a role inherits the loading thread's nice value and
scheduling policy, so what the loading thread runs at is what the role runs at. The
backend here is a stand-in whose ``load`` records the thread's own priority and starts
a thread of its own, as llama.cpp starts its loop and compute threads; no model is
loaded (the real roles are loaded by tests/inference/test_modelserver.py)."""

from __future__ import annotations

import os
import threading
from typing import Any

from inference.modelserver import _load_nicer


class _Recorder:
    """Records the policy and nice value of the thread that loads it, and of a thread
    that thread starts."""

    role = "fallback"

    def __init__(self) -> None:
        self.seen: dict[str, tuple[int, int]] = {}

    def load(self) -> None:
        self.seen["loader"] = _priority()
        child = threading.Thread(target=lambda: self.seen.__setitem__("child", _priority()))
        child.start()
        child.join()


def _priority() -> tuple[int, int]:
    tid = threading.get_native_id()
    return os.sched_getscheduler(tid), os.getpriority(os.PRIO_PROCESS, tid)


def test_an_idle_role_runs_under_sched_idle_and_the_caller_keeps_its_priority() -> None:
    before = _priority()
    backend: Any = _Recorder()
    _load_nicer(backend, 5, idle=True)
    nice = min(19, before[1] + 5)
    assert backend.seen["loader"] == (os.SCHED_IDLE, nice)
    assert backend.seen["child"] == (os.SCHED_IDLE, nice)  # llama.cpp's threads inherit it
    assert _priority() == before


def test_a_role_without_idle_keeps_the_normal_policy() -> None:
    before = _priority()
    backend: Any = _Recorder()
    _load_nicer(backend, 5)
    assert backend.seen["child"] == (before[0], min(19, before[1] + 5))
