"""An order intent's own topic: the words most of its example utterances share
("order", "track", "package" for order status; 订单, 物流 ...).

An order flow quotes a shop rule only for what a message asks beyond these
(``knowledge.rule_case``): "where is my order?" asks nothing more than its intent, so
no rule is quoted. The words come from the router's example utterances (seeded from
routing/seed_data/intents.json, edited in admin), per language: a shop whose shoppers
say "parcel" teaches it with its own examples. Cached per process and rebuilt when the
router version moves. Blocking (database, jieba).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable

from inference.versioned import VersionedCache
from knowledge.rule_case import message_terms
from routing.versioning import ROUTER_VERSION

# A word is the intent's topic when this share of its examples (and at least
# ``MIN_EXAMPLES`` of them) say it: "order" is in most order-status examples, a product
# named in one example is not.
TOPIC_SHARE = 0.05
MIN_EXAMPLES = 2

Topics = dict[tuple[str, str], frozenset[str]]


def _build(previous: Topics | None, version: Hashable) -> Topics:
    from routing.models import Utterance

    texts: dict[tuple[str, str], list[str]] = {}
    for intent, language, text in Utterance.objects.values_list("intent__name", "language", "text"):
        texts.setdefault((intent, language), []).append(text)
    topics: Topics = {}
    for key, examples in texts.items():
        counts: Counter[str] = Counter()
        for text in examples:
            counts.update(message_terms(text))
        floor = max(MIN_EXAMPLES, TOPIC_SHARE * len(examples))
        topics[key] = frozenset(term for term, n in counts.items() if n >= floor)
    return topics


_cache: VersionedCache[Topics] = VersionedCache(
    name="intent topics", source=ROUTER_VERSION, build=_build
)


def intent_topic(intent: str, language: str) -> frozenset[str]:
    """The words of ``intent``'s own topic in ``language`` (empty for an intent without
    examples in it)."""
    lang = "zh" if language.startswith("zh") else "en"
    return _cache.get().get((intent, lang), frozenset())
