"""The shop's words as data (knowledge.shop_words): the demo shop's synonym sets, loaded
from its seed files into the database, answer every lexicon lookup exactly as the
word lists in code did (tests/knowledge/data/lexicon_parity.json, dumped from them),
and a set a support admin adds changes the answers in this process at once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from knowledge import lexicon, shop_words

PARITY = Path(__file__).parent / "data" / "lexicon_parity.json"


def _lookups() -> dict[str, dict[str, Any]]:
    out = {}
    for word in json.loads(PARITY.read_text(encoding="utf-8")):
        out[word] = {
            "alternatives": sorted(lexicon.alternatives(word)),
            "alternatives_no_goods": sorted(lexicon.alternatives(word, goods_in_general=False)),
            "alternatives_same": sorted(lexicon.alternatives(word, broader=False)),
            "expand_tokens": lexicon.expand_tokens([word]),
            "is_goods": lexicon.is_goods(word),
        }
    return out


@pytest.mark.django_db
def test_demo_seed_in_the_database_answers_as_the_lists_in_code_did() -> None:
    from knowledge.models import SynonymSet
    from knowledge.seed import synonyms_seed

    SynonymSet.objects.all().delete()
    assert synonyms_seed() > 60
    assert synonyms_seed() == 0  # idempotent
    shop_words.reset()
    expected = json.loads(PARITY.read_text(encoding="utf-8"))
    got = _lookups()
    differ = {w: (got[w], expected[w]) for w in expected if got[w] != expected[w]}
    assert not differ
    assert lexicon.alternatives("postag") >= {"ship", "deliveri"}
    assert "电子产品" in lexicon.alternatives("手机")


@pytest.mark.django_db
def test_without_sets_the_shop_has_no_words() -> None:
    from knowledge.models import SynonymSet

    SynonymSet.objects.all().delete()
    shop_words.reset()
    assert lexicon.alternatives("postag") == frozenset()
    assert lexicon.expand_tokens(["postag"]) == ["postag"]
    assert not lexicon.is_goods("jacket")


@pytest.mark.django_db
def test_a_saved_set_is_used_at_once_and_a_disabled_one_not() -> None:
    from knowledge import services
    from knowledge.models import SynonymSet

    SynonymSet.objects.all().delete()
    shop_words.reset()
    assert "franc" not in lexicon.alternatives("lyon")
    row = services.synonym_set_save(
        synonym_set=SynonymSet(language="en", kind="broader", terms="Lyon, Paris", target="France")
    )
    # One way only: a rule about France covers Lyon, not the other way round.
    assert lexicon.alternatives("lyon") == {"franc"}
    assert lexicon.alternatives("franc") == frozenset()
    assert lexicon.alternatives("lyon", broader=False) == frozenset()
    row.enabled = False
    services.synonym_set_save(synonym_set=row)
    assert lexicon.alternatives("lyon") == frozenset()
    services.synonym_set_save(
        synonym_set=SynonymSet(language="zh", kind="equivalent", terms="送给，转给、转让")
    )
    assert lexicon.alternatives("送给") == {"转给", "转让"}


def test_the_seed_file_format() -> None:
    sets = shop_words.parse_lines(
        "# a comment\npostage, shipping  # trailing\n\nphone, laptop -> electronics, device\n"
        "goods: jacket, coat\n",
        language="en",
    )
    assert [(s.kind, s.terms, s.target) for s in sets] == [
        ("equivalent", ("postage", "shipping"), ()),
        ("broader", ("phone", "laptop"), ("electronics", "device")),
        ("goods", ("jacket", "coat"), ()),
    ]
    with pytest.raises(shop_words.SynonymFileError, match=":1: no terms"):
        shop_words.parse_lines("phone ->", language="en")


def test_using_answers_from_other_tables_inside_the_block_only() -> None:
    other = shop_words.words_build([shop_words.WordSet("en", "equivalent", ("deliver", "ship"))])
    with shop_words.using(other):
        assert lexicon.alternatives("deliv") == {"ship"}
        assert "postag" not in lexicon.alternatives("ship")
    assert "postag" in lexicon.alternatives("ship")
