from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings

from inference import registry
from inference.catalog import CATALOG, model_assemble
from tests.fakes import FakeBackend

# The files' order: longest first, so the xdist workers end together.
from tests.schedule import (  # noqa: F401
    pytest_addoption,
    pytest_collection_modifyitems,
    pytest_configure,
)

# The fixtures with real servers, for tests/inference and tests/chatbot alike.
from tests.servers import (  # noqa: F401
    fallback_model,
    http_fault_server,
    isolated_state,
    l3_url,
    model_server,
    private_redis,
    remote_large,
)


@pytest.fixture(autouse=True)
def _fresh_caches() -> Iterator[None]:
    """Per-process caches (router snapshot, reply templates, shop profile) must not serve a
    previous test's rolled-back rows."""
    from routing.templates import reset_template_cache
    from routing.versioning import router_caches_expire
    from shop.profile import profile_cache_clear

    router_caches_expire()
    reset_template_cache()
    profile_cache_clear()
    yield
    profile_cache_clear()


@pytest.fixture(scope="session")
def _demo_words() -> Any:
    from knowledge import shop_words

    return shop_words.words_build(shop_words.seed_sets())


@pytest.fixture(autouse=True)
def _shop_words(_demo_words: Any, settings: Any) -> Iterator[None]:
    """The demo shop's synonym sets (its seed files), served without a database until a
    test changes a set (``knowledge.services.synonym_set_save`` expires them; the next
    use reads the database). Tests of the sets themselves call ``shop_words.reset()``."""
    from knowledge import shop_words

    settings.TIERDESK_SHOP_WORDS_REFRESH_S = 3600.0
    shop_words.install(_demo_words)
    yield
    shop_words.reset()


@pytest.fixture
def fake_models() -> Iterator[dict[str, FakeBackend]]:
    """Replace every model role with a recording fake; restored afterwards."""
    # "large" is an alias of "fallback" by default, so it resolves to the same fake.
    fakes = {role: FakeBackend(role=role, chat=role != "fast") for role in ("fast", "fallback")}
    for role, fake in fakes.items():
        registry.register(role, fake)
    yield fakes
    for role in fakes:
        registry.unregister(role)


@pytest.fixture(scope="session")
def model_files() -> None:
    """Make sure the real GGUF files are assembled and verified (make setup does this)."""
    for name in ("gemma3-270m-q4km", "qwen2.5-coder-0.5b-instruct-q4km"):
        model_assemble(entry=CATALOG[name], model_dir=settings.TIERDESK_MODEL_DIR)


@pytest.fixture(autouse=True)
def _default_language() -> Iterator[None]:
    """Each test starts in the site's default language. A request through the test
    client in another language leaves that language active in the thread
    (LocaleMiddleware activates it; nothing deactivates it), and a later test on the
    same worker read its English messages in Chinese."""
    from django.utils import translation

    translation.deactivate()
    yield
    translation.deactivate()


@pytest.fixture
def seeded_shop(db: None) -> None:
    from chatbot.orders.seed import catalogue_seed, shop_seed
    from routing.seed import intents_seed
    from routing.seed_templates import templates_seed

    shop_seed()
    catalogue_seed()
    intents_seed()
    templates_seed()


@pytest.fixture(autouse=True, scope="session")
def _close_thread_connections(django_db_setup: None, django_db_blocker) -> Iterator[None]:
    """Worker threads (database_sync_to_async, live servers) keep their own database
    connections; end them so the test database can be dropped after the run."""
    yield
    _other_connections_end(django_db_blocker)


def _other_connections_end(django_db_blocker: Any, state_like: str = "%") -> list[tuple[int, str]]:
    """End the test database's other connections (those whose state is LIKE
    ``state_like``); returns each one's pid and last query."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return []
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid, left(query, 200), pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "AND coalesce(state, '') LIKE %s",
            [state_like],
        )
        return [(pid, query) for pid, query, _ended in cursor.fetchall()]


@pytest.fixture(autouse=True)
def _chat_pools_end(request: pytest.FixtureRequest, django_db_blocker: Any) -> Iterator[None]:
    """After each test (torn down before pytest-django's own database teardown): end the
    chat's thread pools, and with their threads their database connections.

    Why: in a full run on 2026-12-01 a pool thread's connection, kept from an earlier
    test, sat "idle in transaction" and the next transactional test's flush (TRUNCATE)
    waited for it forever. The cause of that open transaction was not found in the
    time; this keeps one test's connections from reaching the next test, and as a last
    resort ends any connection still idle in a transaction before the flush, naming it
    in a warning so that it is not silent."""
    yield
    from chatbot.threads import pools_shutdown

    pools_shutdown()
    marker = request.node.get_closest_marker("django_db")
    if marker is None or not marker.kwargs.get("transaction"):
        return
    for pid, query in _other_connections_end(django_db_blocker, "idle in transaction%"):
        warnings.warn(
            f"{request.node.nodeid}: connection {pid} left idle in a transaction "
            f"(last query: {query}); ended before the flush",
            stacklevel=1,
        )


@pytest.fixture(autouse=True)
def _fresh_channel_layer() -> Iterator[None]:
    """Each test gets its own channel-layer instance: channels_redis binds its locks to
    the event loop that first used them, and every async test has a new loop (a layer
    kept from an earlier test failed a desk test with "Lock ... is bound to a different
    event loop" when the suite ran whole)."""
    from channels.layers import channel_layers

    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()
