"""The one cache-refresh scheme (inference/versioned.py): a version source checked at
most every interval, a cache rebuilt only when the version moved, and never an outage."""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Any

import pytest

from inference.versioned import BuildPending, VersionedCache, VersionSource


class World:
    """A version counter (the database row) and a clock the test moves."""

    def __init__(self) -> None:
        self.version = 1
        self.now = 1000.0
        self.reads = 0
        self.down = False
        self.stamp = ""

    def read(self) -> Hashable:
        self.reads += 1
        if self.down:
            raise ConnectionError("database is down")
        return (self.version, self.stamp or f"stamp-{self.version}")


@pytest.fixture
def world() -> World:
    return World()


def make(
    world: World, interval: float = 2.0
) -> tuple[VersionSource, VersionedCache[str], list[Any]]:
    source = VersionSource(
        name="test", read=world.read, check_interval_s=interval, clock=lambda: world.now
    )
    builds: list[Any] = []

    def build(previous: str | None, key: Hashable) -> str:
        builds.append((previous, key))
        return f"value for {key}"

    return source, VersionedCache(name="test cache", source=source, build=build), builds


def test_no_bump_no_rebuild_and_no_query_within_the_interval(world: World) -> None:
    _source, cache, builds = make(world)
    assert cache.get() == "value for (1, 'stamp-1')"
    for _ in range(5):
        world.now += 0.3
        assert cache.get() == "value for (1, 'stamp-1')"
    assert len(builds) == 1 and world.reads == 1

    # After the interval the version is read again; unchanged, nothing is rebuilt.
    world.now += 2.0
    assert cache.get() == "value for (1, 'stamp-1')"
    assert len(builds) == 1 and world.reads == 2


def test_a_bump_is_rebuilt_after_the_interval_with_the_previous_value(world: World) -> None:
    _source, cache, builds = make(world)
    cache.get()
    world.version += 1  # another process's change: no signal reaches this one

    world.now += 1.0
    assert cache.get() == "value for (1, 'stamp-1')"  # within the interval: not seen yet
    world.now += 1.5
    assert cache.get() == "value for (2, 'stamp-2')"
    assert builds[-1] == ("value for (1, 'stamp-1')", (2, "stamp-2"))
    assert cache.key == (2, "stamp-2")


def test_expire_makes_this_process_s_own_bump_visible_at_once(world: World) -> None:
    source, cache, builds = make(world)
    cache.get()
    world.version += 1
    source.expire()
    assert cache.get() == "value for (2, 'stamp-2')" and len(builds) == 2
    # Expiring without a bump costs one read, no rebuild.
    source.expire()
    cache.get()
    assert len(builds) == 2 and world.reads == 3


def test_one_source_expires_all_of_its_caches(world: World) -> None:
    source, first, _ = make(world)
    second: VersionedCache[int] = VersionedCache(
        name="second", source=source, build=lambda previous, key: (previous or 0) + 1
    )
    first.get(), second.get()
    world.version += 1
    source.expire()
    assert first.get() == "value for (2, 'stamp-2')" and second.get() == 2


def test_a_rolled_back_bump_that_reuses_the_counter_still_rebuilds(world: World) -> None:
    _source, cache, builds = make(world)
    cache.get()
    world.stamp = "another stamp"
    world.now += 5
    assert cache.get() == "value for (1, 'another stamp')" and len(builds) == 2


def test_the_interval_can_be_a_callable_read_on_every_check(world: World) -> None:
    interval = [2.0]
    source = VersionSource(
        name="test", read=world.read, check_interval_s=lambda: interval[0], clock=lambda: world.now
    )
    cache: VersionedCache[int] = VersionedCache(
        name="c", source=source, build=lambda previous, key: world.version
    )
    cache.get()
    interval[0] = 0.0  # e.g. TIERDESK_KB_REFRESH_S=0 in tests: check on every call
    world.version += 1
    assert cache.get() == 2


def test_a_failing_check_or_build_serves_the_previous_value(world: World) -> None:
    _source, cache, _builds = make(world)
    assert cache.get() == "value for (1, 'stamp-1')"
    world.down = True
    world.now += 5
    assert cache.get() == "value for (1, 'stamp-1')"
    reads = world.reads
    # ... and retries only after the next interval, not on every call.
    world.now += 1
    cache.get()
    assert world.reads == reads
    world.down = False
    world.version += 1
    world.now += 5
    assert cache.get() == "value for (2, 'stamp-2')"


def test_a_failing_build_serves_the_previous_value(world: World) -> None:
    source = VersionSource(name="t", read=world.read, check_interval_s=2.0, clock=lambda: world.now)

    def build(previous: str | None, key: Hashable) -> str:
        if previous is not None:
            raise RuntimeError("bad row")
        return "first"

    cache = VersionedCache(name="c", source=source, build=build)
    assert cache.get() == "first"
    world.version += 1
    source.expire()
    assert cache.get() == "first"


def test_without_a_value_the_error_propagates(world: World) -> None:
    _source, cache, _builds = make(world)
    world.down = True
    with pytest.raises(ConnectionError):
        cache.get()


def test_build_pending_keeps_the_previous_value_until_ready(world: World) -> None:
    source = VersionSource(name="t", read=world.read, check_interval_s=2.0, clock=lambda: world.now)
    ready = [False]

    def build(previous: str | None, key: Hashable) -> str:
        if previous is not None and not ready[0]:
            raise BuildPending("not yet")
        return f"v{world.version}"

    cache = VersionedCache(name="c", source=source, build=build)
    assert cache.get() == "v1"
    world.version += 1
    world.now += 5
    assert cache.get() == "v1"
    ready[0] = True
    world.now += 5
    assert cache.get() == "v2"


def test_install_serves_a_prepared_value_until_the_version_moves(world: World) -> None:
    _source, cache, builds = make(world)
    cache.install("prepared", key=(1, "stamp-1"))
    world.now += 5
    assert cache.get() == "prepared" and not builds
    world.version += 1
    world.now += 5
    assert cache.get() == "value for (2, 'stamp-2')"


def test_force_check_and_reset(world: World) -> None:
    _source, cache, builds = make(world)
    cache.get()
    world.version += 1
    assert cache.get(force_check=True) == "value for (2, 'stamp-2')"
    cache.reset()
    assert cache.key is None
    cache.get()
    assert builds[-1] == (None, (2, "stamp-2"))


def test_readers_keep_the_previous_value_while_another_thread_rebuilds(world: World) -> None:
    source = VersionSource(name="t", read=world.read, check_interval_s=0.0, clock=lambda: world.now)
    started, release = threading.Event(), threading.Event()

    def build(previous: str | None, key: Hashable) -> str:
        if previous is not None:
            started.set()
            assert release.wait(5)
        return f"v{world.version}"

    cache = VersionedCache(name="c", source=source, build=build)
    assert cache.get() == "v1"
    world.version += 1
    rebuilding = threading.Thread(target=cache.get)
    rebuilding.start()
    assert started.wait(5)
    assert cache.get() == "v1"  # does not wait for the rebuild
    release.set()
    rebuilding.join(5)
    assert cache.get() == "v2"
