"""Does a passage answer the question? The question-coverage check: which of the
question's content words the passages hold (``question_coverage``).

A relevant-looking passage may still leave out what the question is about ("is the
leather on your boots ethically sourced?" against the boots' warranty). L2 then says
it doesn't know rather than answer from it, an order flow quotes no rule, the router
keeps the question, and an answer card is not matched. English words are compared by
stem and the shop's other words for them (knowledge.lexicon), Chinese words or their
characters; goods in general count neither way, and a passage stating its own figure
of the kind asked (a duration, an amount) answers a question's figure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import lexicon
from . import text as ktext
from .numerals import DAYS, quantities
from .question_type import is_tag_question, is_wh, is_yes_no
from .terms import COURTESY_TERMS, content_terms, normalise, tokens, zh_chars

# Question words that say how it is asked, not what about ("how fast", "whats", "..., right?").
QUESTION_FILLER = ktext.wordset(
    """
    whats what's right fast quick quickly long soon enough after before anymore ever even
    possible allowed able okay ok sure guys pls plz thx until till while ur lol 才 不了 行
    对 对吧 吗 吧 呢 多快 现在 一般 到底 直接
    """
)
# A question about something the passages don't mention at all: this share or less of
# its content words found there, with at least two missing, is not answered by them.
# Tuned on the dev split of bench/sets/answers/demo (docs/knowledge.md, "Truthfulness").
MIN_QUESTION_COVERAGE = 0.5
MAX_MISSING_TERMS = 1


@dataclass
class Coverage:
    terms: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    # A yes/no question's nouns the passages don't have: the thing it asks about.
    missing_nouns: list[str] = field(default_factory=list)

    @property
    def share(self) -> float:
        return 1.0 - len(self.missing) / len(self.terms) if self.terms else 1.0

    @property
    def answers(self) -> bool:
        """False when the passages leave out what the question is about."""
        if not self.terms:
            return True
        if len(self.missing) == len(self.terms) or self.missing_nouns:
            return False
        return not (len(self.missing) > MAX_MISSING_TERMS and self.share <= MIN_QUESTION_COVERAGE)


def _zh_word_found(word: str, text: str, chars: set[str]) -> bool:
    if word in text or normalise(word) in text:
        return True
    own = [
        ch
        for ch in normalise(word)
        if "\u4e00" <= ch <= "\u9fff" and ch not in ktext.ZH_FILLER_CHARS
    ]
    if len(own) <= 1:
        return not own or own[0] in chars
    if len(own) < len(word) and "".join(own) in text:
        # A word jieba glued to a modal or particle ("铜卡要", "中是"): its content.
        return True
    # A longer word counts when half its characters are there ("皮夹克" is about the
    # 夹克 the passage names); a two-character word must be there as it is.
    return len(own) == 3 and sum(ch in chars for ch in own) >= 2


def character_share(question: str, text: str) -> float:
    """The share of a Chinese question's content characters found in ``text`` (0 for
    a question with none): a word the passage says differently ("纯棉" against
    "棉或涤纶") still shares its characters."""
    wanted = zh_chars(question)
    return len(wanted & zh_chars(text)) / len(wanted) if wanted else 0.0


def question_coverage(
    question: str, passages: list[str], *, numbers: bool = True, nouns: bool = True
) -> Coverage:
    """Which of the question's content words the passages contain (stems and the shop's
    synonyms in English, words or their characters in Chinese). Used to decide that
    a relevant-looking passage doesn't answer the question ("is the leather on your
    boots ethically sourced?" against the boots' warranty). ``numbers=False`` leaves
    the question's numbers out; ``nouns=False`` skips the yes/no noun rule (routing
    keeps its bar: L2 then says it doesn't know)."""
    text = normalise(" ".join(" ".join(passages).split()))
    stems = tokens(text)
    chars = zh_chars(text)
    out = Coverage()
    # A tag question states the shopper's figure to have it confirmed ("free shipping
    # kicks in at $75, right?"): the passage answers it with its own figure.
    numbers_count = not is_tag_question(question)
    # A wh-question asks for what its wh-word names; its verbs and adverbs say how it
    # is asked ("where do I look to find the inseam?", "寄去修要多久"), so a passage
    # that says them differently still answers it. A yes/no question's verb is what it
    # asks about ("is the leather ethically sourced?"): there every word counts.
    predicates = ktext.predicate_words(question) if is_wh(question) else frozenset()
    # The passage states its own figure of the same kind (a duration, an amount): that
    # answers the question's ("礼品卡买了两年了还能用吗" against "36个月后过期", "overcharged
    # me $30" against "less than $10"); the entailment check judges the figures.
    stated = _figure_kinds(text)
    for word in ktext.question_keywords(question):
        lowered = word.lower()
        if lowered in QUESTION_FILLER or lowered in COURTESY_TERMS or not lowered.strip("?？!！.,"):
            continue
        if lowered in ktext.GENERIC_NOUNS:
            # Goods in general ("can I return things in a store?", "东西坏了能退吗"):
            # no passage has to name them, so they count neither way.
            continue
        if not numbers and quantities(word) and not content_terms(word):
            continue
        if not numbers_count and quantities(word) and not content_terms(word):
            continue
        if ktext.has_cjk(word):
            found = _zh_word_found(word, text, chars) or any(
                _zh_word_found(alt, text, chars)
                for alt in lexicon.alternatives(word, goods_in_general=False)
            )
        else:
            own = tokens(lowered)
            found = bool(own & stems) or not own
            # The shop's other words for it (postage: shipping; a phone: electronics).
            found = found or any(
                {lexicon.claim_stem(a) for a in lexicon.alternatives(t, goods_in_general=False)}
                & stems
                for t in ktext.index_tokens(lowered)
            )
        if not found and stated:
            found = figure_kind(word, question) in stated
        out.terms.append(word)
        if not found and lowered not in predicates:
            out.missing.append(word)
    if nouns and out.missing and is_yes_no(question) and not is_tag_question(question):
        # "does express shipping deliver on weekends?" against the Express passage: one
        # missing word is usually a paraphrase ("kicks in" for "qualifies"), but in a
        # yes/no question a missing noun is the thing asked about, which the passage
        # doesn't mention (weekends, a student discount, the USA). Not in a tag
        # question ("free shipping kicks in at $75, right?", "…对吧？"): that states a
        # claim in the shopper's words, which the passage corrects in its own.
        named = ktext.specific_nouns(question)
        out.missing_nouns = [
            w
            for w in out.missing
            if w.lower() in named
            and not (ktext.has_cjk(w) and _zh_head(w) in chars)
            and not goods_covered(w, text, stems)
        ]
    return out


# (No \b after 美元/元: a CJK character follows them with no word boundary.)
_MONEY_IN = re.compile(r"\$\s?\d|\d\s*(?:美元|元)|\d\s*(?:dollars?|usd)\b", re.IGNORECASE)
_MONEY_AFTER = r"\s*(?:美元|元|刀|块|bucks|dollars?|usd)"
_DURATION_AFTER = r"\s*(?:days?|weeks?|months?|years?|hours?|个工作日|工作日|天|周|个月|月|年|小时)"
_DURATION_WORDS = frozenset(
    ["day", "days", "week", "weeks", "month", "months", "year", "years", "hour", "hours"]
)


def _figure_kinds(text: str) -> set[str]:
    """The kinds of figure a passage states: "duration" (days to years), "money"."""
    kinds = {"duration"} if any(q.unit in DAYS for q in quantities(text)) else set()
    return kinds | ({"money"} if _MONEY_IN.search(text) else set())


def figure_kind(word: str, question: str) -> str:
    """The kind of figure a question's word is ("两年", "months", the 30 of "$30"), or
    "" for any other word."""
    lowered = word.lower()
    if lowered in _DURATION_WORDS or any(q.unit in DAYS for q in quantities(word)):
        return "duration"
    if not re.fullmatch(r"\d+(?:[.,]\d+)?", lowered):
        return ""
    number = re.escape(lowered)
    if re.search(rf"\${number}\b|(?<![\d.]){number}{_MONEY_AFTER}", question, re.IGNORECASE):
        return "money"
    if re.search(rf"(?<![\d.]){number}{_DURATION_AFTER}", question, re.IGNORECASE):
        return "duration"
    return ""


def goods_covered(word: str, text: str, stems: set[str]) -> bool:
    """A kind of the shop's goods (jeans, 外套) and a passage whose rule is stated for
    items or clothes in general ("You can exchange an item ... for another size"): the
    rule covers it, so it is not the thing the passage leaves out. It still counts as
    missing in the share, so a passage that only mentions items somewhere doesn't
    answer "is the fleece jacket warm enough for skiing?"."""
    if ktext.has_cjk(word):
        return any(alt in text for alt in lexicon.alternatives(word) if alt not in word)
    return any(lexicon.alternatives(t) & stems for t in ktext.index_tokens(word.lower()))


def _zh_head(word: str) -> str:
    """A Chinese noun's head character, the last one before a suffix (帽子 -> 帽):
    纯棉 is a kind of 棉, which the passage on cotton or polyester T-shirts names."""
    stem = word[:-1] if len(word) > 1 and word[-1] in "子儿头" else word
    return stem[-1]
