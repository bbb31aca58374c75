"""What a synonym set changes: the reads behind the admin's synonym pages.

A support admin adds "deliver = ship" or "Lyon → France" (``SynonymSet``) and wants to
know what it does before shoppers find out. ``questions_changed`` asks every approved
card's phrasings (and any questions the admin pastes) twice, with the shop's enabled
sets and with this set left out (or, for a disabled one, put in), and lists the
questions whose best relevant section or served card differs. ``question_terms``
shows what a question's words expand to. Blocking (retrieval, embeddings).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from . import lexicon, shop_words
from . import text as ktext
from .models import AnswerCard, SynonymSet

# The approved phrasings checked on one page view: each is asked twice (retrieval and
# the card match), a few tens of milliseconds each.
QUESTIONS_CHECKED = 120


@dataclass(frozen=True)
class QuestionMatch:
    """What the bot finds for a question: its best relevant section, the card it would
    serve (approved cards only), or neither."""

    section: str  # "Document title › anchor", "" when no passage is relevant
    card: str  # the card's first phrasing, "" when none matches
    card_id: int | None = None

    @property
    def answered(self) -> bool:
        return bool(self.section or self.card)


@dataclass(frozen=True)
class QuestionChange:
    question: str
    without: QuestionMatch
    with_set: QuestionMatch


@dataclass(frozen=True)
class ChangeReport:
    synonym_set: SynonymSet
    checked: int  # questions asked
    available: int  # approved phrasings in the set's language
    changes: list[QuestionChange]


def question_match(question: str, *, language: str) -> QuestionMatch:
    """The section and card the bot finds for ``question`` with the shop words in force
    (``shop_words.using`` picks which)."""
    from .cards import card_match
    from .retrieval import passages_retrieve

    result = passages_retrieve(question=question, language=language)
    relevant = result.relevant
    section = f"{relevant[0].title} › {relevant[0].anchor}" if relevant else ""
    match = card_match(question=question, language=language)
    if match is None:
        return QuestionMatch(section=section, card="")
    card = match.row.question if match.row.kind == "question" else match.row.heading
    return QuestionMatch(section=section, card=card, card_id=match.row.card_id)


def _word_set(row: SynonymSet) -> shop_words.WordSet:
    return shop_words.WordSet(
        row.language, row.kind, tuple(row.term_list()), tuple(row.target_list())
    )


def words_with_and_without(row: SynonymSet) -> tuple[shop_words.ShopWords, shop_words.ShopWords]:
    """The tables with the shop's other enabled sets, without and with ``row`` (saved
    or not, enabled or not)."""
    others = [
        _word_set(r) for r in SynonymSet.objects.filter(enabled=True).exclude(pk=row.pk or -1)
    ]
    return shop_words.words_build(others), shop_words.words_build([*others, _word_set(row)])


def approved_questions(language: str) -> list[str]:
    out: dict[str, None] = {}
    cards = AnswerCard.objects.filter(status=AnswerCard.Status.APPROVED, language=language)
    for questions in cards.order_by("pk").values_list("questions", flat=True):
        for question in questions or []:
            out.setdefault(str(question).strip(), None)
    return [q for q in out if q]


def questions_changed(row: SynonymSet, *, extra: Iterable[str] = ()) -> ChangeReport:
    """The questions (``extra`` first, then the approved phrasings of the set's language)
    that find another section or card with the set than without it."""
    phrasings = approved_questions(row.language)
    own = [q.strip() for q in extra if q.strip()]
    questions = list(dict.fromkeys([*own, *phrasings]))[: len(own) + QUESTIONS_CHECKED]
    without, with_set = words_with_and_without(row)
    changes = []
    for question in questions:
        with shop_words.using(without):
            before = question_match(question, language=row.language)
        with shop_words.using(with_set):
            after = question_match(question, language=row.language)
        if before != after:
            changes.append(QuestionChange(question, before, after))
    return ChangeReport(row, len(questions), len(phrasings), changes)


@dataclass(frozen=True)
class TermsReport:
    question: str
    language: str
    keywords: list[str]
    # Each index term with the shop's other words for it (ranking), and what covers it.
    terms: list[tuple[str, list[str], list[str]]]
    expanded: list[str]
    match: QuestionMatch


def question_terms(question: str, *, language: str | None = None) -> TermsReport:
    """What the shop's words make of a question: its keywords, each term's synonyms and
    broader terms, the expanded terms retrieval searches for, and what it matches."""
    lang = language or ktext.language_detect(question)
    tokens = ktext.index_tokens(question)
    terms = []
    for token in dict.fromkeys(tokens):
        same = lexicon.alternatives(token, broader=False)
        wider = lexicon.alternatives(token, goods_in_general=False) - same
        if same or wider:
            terms.append((token, sorted(same), sorted(wider)))
    return TermsReport(
        question=question,
        language=lang,
        keywords=ktext.question_keywords(question),
        terms=terms,
        expanded=lexicon.expand_tokens(tokens),
        match=question_match(question, language=lang),
    )
