"""The shop's own words: the enabled synonym sets (``SynonymSet``, edited in Django
admin) as the lookup tables ``knowledge.lexicon`` answers from.

A shopper asks about "postage", a "coat", a "voucher" or 客服; the articles say
shipping, jacket, coupon, 员工. Which words a shop's shoppers use is the shop's data,
not the product's: a support admin adds "deliver = ship" or "Lyon → France" in the
admin, and every process answers with it within ``TIERDESK_SHOP_WORDS_REFRESH_S``.

Three relations (``SynonymSet.Kind``):

- equivalent: a word's alternatives are the other terms of every set it is in (not
  transitively: "coupon" in two sets joins both, "voucher" only its own);
- broader: each term is covered by the target, one way (a rule about "electronics"
  answers a question about phones, never the other way round);
- goods: kinds of the shop's goods, covered by a rule about items in general
  (``knowledge.text.GOODS_IN_GENERAL``).

English terms are compared by stem (``knowledge.text.index_tokens``), each word of a
several-word term on its own; Chinese terms as written.

The tables are cached per process and rebuilt when the knowledge-base version moves
(``knowledge.services.synonym_set_save`` bumps it). ``using`` answers from other tables
for a block of code (the admin's "questions it changes" compares with and without a
set). Blocking: the first use, and a check after the interval, read the database.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from inference.versioned import VersionedCache, VersionSource

from . import text as ktext

__all__ = [
    "SOURCE",
    "ShopWords",
    "SynonymFileError",
    "WordSet",
    "current",
    "install",
    "parse_lines",
    "reset",
    "stem",
    "term_keys",
    "using",
    "words_build",
]

EQUIVALENT = "equivalent"
BROADER = "broader"
GOODS = "goods"
KINDS = (EQUIVALENT, BROADER, GOODS)


@dataclass(frozen=True)
class WordSet:
    """One synonym set as the tables read it (a ``SynonymSet`` row, or a seed line)."""

    language: str
    kind: str
    terms: tuple[str, ...]
    target: tuple[str, ...] = ()


def stem(word: str) -> str:
    """An English word as the index compares it ("shipping" -> "ship")."""
    tokens = ktext.index_tokens(word)
    return tokens[0] if tokens else word.lower()


def term_keys(term: str, *, zh: bool) -> list[str]:
    """What a term is looked up by: a Chinese term as written (spaces dropped), each
    word of an English term by its stem."""
    if zh:
        joined = "".join(term.split())
        return [joined] if joined else []
    return [stem(w) for w in term.split()]


def _keys(terms: Iterable[str], *, zh: bool) -> set[str]:
    return {k for t in terms for k in term_keys(t, zh=zh)}


Table = Mapping[str, frozenset[str]]


@dataclass(frozen=True)
class ShopWords:
    """The tables, by (Chinese?, with broader terms?, with goods in general?)."""

    tables: Mapping[tuple[bool, bool, bool], Table] = field(default_factory=dict)
    goods: Mapping[bool, frozenset[str]] = field(default_factory=dict)
    sets: int = 0

    def alternatives(
        self, word: str, *, broader: bool = True, goods_in_general: bool = True
    ) -> frozenset[str]:
        zh = ktext.has_cjk(word)
        table = self.tables.get((zh, broader, broader and goods_in_general), {})
        return table.get(word, frozenset())

    def alternatives_in(self, word: str, *, zh: bool) -> frozenset[str]:
        """The equivalent terms of ``word`` in one language's sets, whatever script
        it is written in (a Chinese set "金卡, gold" names the level gold)."""
        return self.tables.get((zh, False, False), {}).get(word, frozenset())

    def is_goods(self, word: str) -> bool:
        zh = ktext.has_cjk(word)
        return (word if zh else stem(word)) in self.goods.get(zh, frozenset())


def words_build(sets: Iterable[WordSet]) -> ShopWords:
    """The lookup tables for these sets (pure: the admin builds them for a set that is
    not saved yet)."""
    sets = list(sets)
    tables: dict[tuple[bool, bool, bool], Table] = {}
    goods_keys: dict[bool, frozenset[str]] = {}
    for zh in (False, True):
        own = [s for s in sets if (s.language == "zh") == zh]
        same: dict[str, set[str]] = {}
        for s in own:
            if s.kind == EQUIVALENT:
                group = _keys(s.terms, zh=zh)
                for word in group:
                    same.setdefault(word, set()).update(group - {word})
        wider: dict[str, set[str]] = {}
        for s in own:
            if s.kind == BROADER:
                wide = _keys(s.target, zh=zh)
                for word in _keys(s.terms, zh=zh):
                    wider.setdefault(word, set()).update(wide)
        kinds = _keys((s2 for s in own if s.kind == GOODS for s2 in s.terms), zh=zh)
        goods_keys[zh] = frozenset(kinds)
        general = _keys((w for w in ktext.GOODS_IN_GENERAL if ktext.has_cjk(w) == zh), zh=zh)
        for broader, goods in ((False, False), (True, False), (True, True)):
            out = {w: set(a) for w, a in same.items()}
            if broader:
                for word, wide in wider.items():
                    out.setdefault(word, set()).update(wide)
            if goods:
                for word in kinds:
                    out.setdefault(word, set()).update(general)
            tables[(zh, broader, goods)] = {w: frozenset(a - {w}) for w, a in out.items()}
    return ShopWords(tables=tables, goods=goods_keys, sets=len(sets))


# -- the seed file format ----------------------------------------------------------------


class SynonymFileError(ValueError):
    """A line of a synonyms file that says nothing the format knows."""


def parse_lines(text: str, *, language: str, origin: str = "") -> list[WordSet]:
    """A synonyms file (knowledge/seed_data/<language>/synonyms.txt), one set a line,
    terms separated by commas, '#' to the end of a line a comment:

        postage, shipping, delivery        equivalent
        phone, laptop -> electronics       broader (each term on the left is covered)
        goods: jacket, coat, jeans         kinds of goods
    """
    from .models import split_terms

    out = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("goods:"):
            kind, terms, target = GOODS, line.removeprefix("goods:"), ""
        elif "->" in line:
            terms, target = line.split("->", 1)
            kind = BROADER
        else:
            kind, terms, target = EQUIVALENT, line, ""
        word_set = WordSet(language, kind, tuple(split_terms(terms)), tuple(split_terms(target)))
        if not word_set.terms or (kind == BROADER and not word_set.target):
            raise SynonymFileError(f"{origin or 'synonyms'}:{number}: no terms in {raw!r}")
        out.append(word_set)
    return out


def seed_file(language: str) -> Path:
    return Path(__file__).resolve().parent / "seed_data" / language / "synonyms.txt"


def seed_sets() -> list[WordSet]:
    """The demo shop's sets, from its seed files."""
    out = []
    for language in ("en", "zh"):
        path = seed_file(language)
        out += parse_lines(path.read_text(encoding="utf-8"), language=language, origin=str(path))
    return out


# -- the per-process tables --------------------------------------------------------------


def enabled_sets() -> list[WordSet]:
    from .models import SynonymSet

    return [
        WordSet(row.language, row.kind, tuple(row.term_list()), tuple(row.target_list()))
        for row in SynonymSet.objects.filter(enabled=True).order_by("pk")
    ]


def _key_read() -> Hashable:
    """The knowledge-base version (the row ``services.kb_version_bump`` moves)."""
    from .models import KnowledgeBaseVersion

    row = KnowledgeBaseVersion.objects.filter(pk=1).values_list("version", "updated_at").first()
    if row is None:
        return (0, "")
    return (int(row[0]), row[1].isoformat() if row[1] else "")


SOURCE = VersionSource(
    name="shop words",
    read=_key_read,
    check_interval_s=lambda: settings.TIERDESK_SHOP_WORDS_REFRESH_S,
)
_cache: VersionedCache[ShopWords] = VersionedCache(
    name="shop words", source=SOURCE, build=lambda previous, key: words_build(enabled_sets())
)
_override: ContextVar[ShopWords | None] = ContextVar("shop_words_override", default=None)


def current() -> ShopWords:
    """The tables in force: those of a ``using`` block, else the enabled sets'."""
    words = _override.get()
    return words if words is not None else _cache.get()


@contextmanager
def using(words: ShopWords) -> Iterator[ShopWords]:
    """Answer from ``words`` inside the block (this thread or task only)."""
    token = _override.set(words)
    try:
        yield words
    finally:
        _override.reset(token)


def install(words: ShopWords) -> None:
    """Serve ``words`` until the next check finds the version moved (the benchmark,
    tests that run without a database)."""
    _cache.install(words, key=("installed",))


def reset() -> None:
    """Forget the tables: the next use reads the database."""
    _cache.reset()
