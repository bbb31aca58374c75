"""Which drafted card questions to keep: ones a shopper would ask and the section
answers (about the section, naming what its heading names, asking for no opinion)."""

from __future__ import annotations

import re

from . import ingest
from . import text as ktext

MIN_QUESTION_OVERLAP = 0.5


def heading_question(section: ingest.Section) -> str:
    """The last part of the heading path ("Gift cards > Do they expire?")."""
    return section.heading.split(" > ")[-1].strip() if section.heading else ""


def question_about(question: str, section: ingest.Section) -> bool:
    words = set(ktext.index_tokens(question))
    if not words:
        return False
    present = set(ktext.index_tokens(f"{section.heading} {section.text}"))
    return len(words & present) / len(words) >= MIN_QUESTION_OVERLAP


# Questions that ask for an opinion or a case for something ("What are the benefits of
# gift wrapping?"): a shop's rule never answers them, so no shopper is served a card for
# them. Any shop, either language.
_SPECULATIVE = re.compile(
    r"\b(?:benefits?|advantages?|disadvantages?|pros and cons|drawbacks?|worth it|"
    r"why should|why would|why do you|importance|important)\b|好处|优点|缺点|优势|值得|为什么要",
    re.IGNORECASE,
)
# How a shopper asks for a value the section states ("how much does it cost?", "how
# long does it take?"): these words need not be in the section.
_ASKING = frozenset(
    ktext.stemmer().stemWord(w)
    for w in ktext.wordset(
        """
        cost costs price fee charge much long take takes time pay need get work happen
        possible allow allowed okay way buy order add
        """
    )
) | ktext.wordset("费用 价格 多少 多久 时间 需要 收费 可以 能 怎么")


def speculative(question: str) -> bool:
    """Asks for an opinion or a case for something, which no shop rule answers."""
    return bool(_SPECULATIVE.search(question))


def shopper_question(question: str, section: ingest.Section) -> bool:
    """A drafted question a shopper would ask and the section answers: about the
    section (``question_about``), naming what its heading names (when the heading
    names anything), asking for no opinion, and bringing at most one word of its own
    besides the words a shopper asks for a value with."""
    if not question_about(question, section) or _SPECULATIVE.search(question):
        return False
    words = _own_words(question) - _ASKING
    heading = _own_words(heading_question(section)) - _ASKING
    if heading and not words & heading:
        return False
    material = f"{section.heading} {section.text}"
    present = _own_words(material)
    unknown = [w for w in words if w not in present and not (ktext.has_cjk(w) and w in material)]
    return len(unknown) <= max(1, len(words) // 3)


def _own_words(text: str) -> set[str]:
    """Content words, English ones stemmed, Chinese ones as jieba cuts them (no
    character pairs: a pair across two words is no word of the question)."""
    stem = ktext.stemmer().stemWord
    return {w if ktext.has_cjk(w) else stem(w) for w in ktext.content_words(text)}
