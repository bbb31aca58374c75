from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.conf import settings

from inference import registry
from inference.catalog import CATALOG, model_assemble
from tests.fakes import FakeBackend


@pytest.fixture
def fake_models() -> Iterator[dict[str, FakeBackend]]:
    """Replace every model role with a recording fake; restored afterwards."""
    fakes = {role: FakeBackend(role=role, chat=role != "fast") for role in ("fast", "fallback", "large")}
    for role, fake in fakes.items():
        registry.register(role, fake)
    yield fakes
    for role in fakes:
        registry.unregister(role)


@pytest.fixture(scope="session")
def model_files() -> None:
    """Make sure the real GGUF files are assembled and verified (make setup does this)."""
    for name in ("gemma3-270m-q4km", "qwen2.5-0.5b-instruct-q4km"):
        model_assemble(entry=CATALOG[name], model_dir=settings.TIERDESK_MODEL_DIR)


@pytest.fixture
def seeded_shop(db: None) -> None:
    from chatbot.orders.seed import shop_seed
    from routing.seed import intents_seed
    from routing.seed_templates import templates_seed

    shop_seed()
    intents_seed()
    templates_seed()
