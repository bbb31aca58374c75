"""The L2 cache holds only checked answers, and a knowledge-base change invalidates it.

The reader model is a fake here (tests/fakes.py): what is under test is what the cache
stores and when it may serve it, which needs a known reply; retrieval, the entailment
guard, Redis and the consumer are real."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async

from inference.cache import cache_clear_local
from knowledge import index, services
from knowledge.models import Document
from tests.shopper import connect, frames_until_end, send

pytestmark = pytest.mark.django_db(transaction=True)

ANSWER = "The Hiking Boots come in a waterproof version and a version that is not waterproof."
INVENTED = "Soak them overnight in warm water to soften new leather."


def _seed() -> None:
    from knowledge.seed import knowledge_seed

    knowledge_seed(ingest_now=True, keys=["en-boots-faq"])


async def ask(text: str) -> tuple[str, dict[str, Any]]:
    comm, _ = await connect()
    await send(comm, text, "c1")
    frames = await frames_until_end(comm, wait_s=60)
    await comm.disconnect()
    shown = "".join(f["text"] for f in frames if f["type"] == "chunk")
    return shown, frames[-1]


async def test_only_the_checked_answer_is_cached_and_an_article_edit_invalidates_it(
    seeded_shop: None, fake_models: dict[str, Any], settings: Any
) -> None:
    settings.TIERDESK_RESPONSE_CACHE = True
    settings.TIERDESK_KB_SUMMARY_ROLE = ""
    settings.TIERDESK_KB_REFRESH_S = 0.0
    cache_clear_local()
    index.reset()
    await database_sync_to_async(_seed)()
    reader = fake_models["fallback"]
    reader.replies = [f"{ANSWER} {INVENTED}", f"{ANSWER} {INVENTED}"]

    shown, done = await ask("are the boots waterproof?")
    assert done["tier"] == "L2" and done["guard"] == "trimmed", done
    assert shown == ANSWER and len(reader.calls) == 1

    # A new conversation gets the checked answer from the cache: the model is not
    # asked, and the dropped sentence is not in what was stored.
    shown, done = await ask("are the boots waterproof?")
    assert shown == ANSWER and len(reader.calls) == 1
    assert done["guard"] == "passed"

    # The support admin edits the article: the next answer is written again.
    def edit() -> None:
        doc = Document.objects.get(seed_key="en-boots-faq")
        doc.text = doc.text + "\n\n## Laces\n\nSpare laces come with every pair.\n"
        services.document_save(document=doc)
        services.document_ingest(document_id=doc.pk)

    await database_sync_to_async(edit)()
    shown, done = await ask("are the boots waterproof?")
    assert len(reader.calls) == 2, "a knowledge-base change must invalidate the cache"
    assert shown == ANSWER
