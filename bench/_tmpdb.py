"""A throw-away SQLite database for benchmarks that need Django data but no server."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def django_on_temp_sqlite(*, shop: bool) -> Iterator[None]:
    var = tempfile.mkdtemp(prefix="tierdesk-bench-")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    # The assembled model files stay where `make setup` put them.
    os.environ.setdefault("TIERDESK_MODEL_DIR", os.path.join(root, "var", "models"))
    os.environ.update(
        TIERDESK_VAR_DIR=var,
        DATABASE_URL="",
        REDIS_URL="",
        CELERY_BROKER_URL="memory://",
        TIERDESK_ENV="test",
        TIERDESK_WARMUP_ON_START="false",
        HF_HUB_OFFLINE="1",
        DJANGO_SETTINGS_MODULE="config.settings",
    )
    try:
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0, interactive=False)
        from routing.seed import intents_seed

        intents_seed()
        if shop:
            from chatbot.orders.seed import catalogue_seed, shop_seed
            from routing.seed_templates import templates_seed

            shop_seed()
            catalogue_seed()
            templates_seed()
        yield
    finally:
        shutil.rmtree(var, ignore_errors=True)
