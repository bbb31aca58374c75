from __future__ import annotations

from collections.abc import Iterator

import pytest

from routing.versioning import router_caches_expire


@pytest.fixture(autouse=True)
def _router_caches_fresh() -> Iterator[None]:
    # Each test's data is rolled back afterwards; without this a cache that checked
    # the version less than two seconds ago would keep serving the previous test's.
    router_caches_expire()
    yield
    router_caches_expire()


@pytest.fixture
def seeded(db: None) -> dict[str, int]:
    from routing.seed import intents_seed

    return intents_seed()
