"""Is an answer grounded in the passages it cites? A script's answer, not a reader's.

The answer is split into sentences; each sentence is a claim. A claim is grounded when
every number in it appears in the cited passages and at least ``MIN_SUPPORT`` of its
content words (stemmed English words, jieba words for Chinese) appear there too.
Sentences that only say "I don't know" make no claim. An answer is grounded when all
its claims are. Crude, deterministic and strict about numbers, which is where a small
model invents most (prices, days, percentages).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import text as ktext
from .text import is_qualified

MIN_SUPPORT = 0.7
# Claims are cut at semicolons too (ktext.SENTENCE_OR_CLAUSE); the refusal is the
# entailment check's (ktext.REFUSAL).
_SENTENCE = ktext.SENTENCE_OR_CLAUSE
_REFUSAL = ktext.REFUSAL


@dataclass
class Claim:
    text: str
    support: float
    missing_words: list[str]
    missing_numbers: list[str]

    @property
    def grounded(self) -> bool:
        return not self.missing_numbers and self.support >= MIN_SUPPORT


@dataclass
class Grounding:
    claims: list[Claim] = field(default_factory=list)

    @property
    def grounded(self) -> bool:
        return all(c.grounded for c in self.claims)


# Courtesy and framing carry no claim about the shop ("Sorry!", "Based on the
# information provided, ...").
COURTESY = frozenset(
    [
        "sorri",
        "glad",
        "happi",
        "welcom",
        "great",
        "sure",
        "apolog",
        "unfortun",
        "hope",
        "base",
        "inform",
        "provid",
        "passag",
        "accord",
        "articl",
        "mention",
        "state",
        "抱歉",
        "不好意思",
        "很高兴",
        "希望",
        "帮到",
        "根据",
        "段落",
        "提到",
        "信息",
    ]
)
_LIST_MARKER = re.compile(r"^\(?\d{1,2}[.)]$")


def _norm_number(value: str) -> str:
    value = value.replace(",", "")
    return value[:-3] if value.endswith(".00") else value


def answer_grounding(answer: str, passages: list[str], *, question: str = "") -> Grounding:
    """Words the answer repeats from the question are not claims about the shop
    ("Yes, the boots can be worn in heavy rain" restates the question; it's the
    passage that must back "yes"). Numbers must always come from the passages."""
    source = "\n".join(passages)
    echoed = set(ktext.index_tokens(question))
    source_terms = set(ktext.index_tokens(source))
    source_numbers = {_norm_number(n) for n in ktext.numbers(source)}
    result = Grounding()
    for sentence in _SENTENCE.split(answer):
        sentence = sentence.strip()
        if not sentence or _REFUSAL.search(sentence) or _LIST_MARKER.match(sentence):
            continue
        terms = [t for t in ktext.index_tokens(sentence) if t not in COURTESY and t not in echoed]
        nums = [_norm_number(n) for n in ktext.numbers(sentence)]
        if not terms and not nums:
            continue
        missing = [t for t in terms if t not in source_terms]
        support = 1.0 - len(missing) / len(terms) if terms else 1.0
        result.claims.append(
            Claim(
                text=sentence,
                support=support,
                missing_words=missing,
                missing_numbers=[n for n in nums if n not in source_numbers],
            )
        )
    return result


@dataclass
class GuardedAnswer:
    """What the shopper is shown: the model's answer, trimmed, or an extract."""

    text: str
    verdict: str  # "passed" | "trimmed" | "extract"
    unsupported: list[str] = field(default_factory=list)


def answer_guard(answer: str, passages: list[str], *, question: str, extract: str) -> GuardedAnswer:
    """The L2 counterpart of the L1 fact guard: a claim the passages don't back never
    reaches the shopper.

    - every claim grounded: the answer goes out as written;
    - some grounded, some not: the unsupported sentences are dropped (the grounded ones
      still answer, and a small model's typical slip is one invented sentence at the
      end: "contact customer service", a fee, a deadline);
    - none grounded: ``extract`` (the best passage's own sentences) is sent instead.
    """
    grounding = answer_grounding(answer, passages, question=question)
    if grounding.grounded:
        return GuardedAnswer(answer, "passed")
    unsupported = [c.text for c in grounding.claims if not c.grounded]
    if any(c.grounded for c in grounding.claims):
        bad = set(unsupported)
        kept = [s.strip() for s in _SENTENCE.split(answer) if s.strip() and s.strip() not in bad]
        joiner = "" if ktext.has_cjk(answer) else " "
        return GuardedAnswer(joiner.join(kept), "trimmed", unsupported)
    return GuardedAnswer(extract, "extract", unsupported)


# An exception named as such. Not a cue for the entailment check, where "金卡会员例外，
# 穿过的商品也可以退" names whom a rule is for rather than limiting a claim about them.
_EXCEPTION = re.compile(r"例外|\bexceptions?\b", re.IGNORECASE)
# A negated rule right after a quoted sentence is the limit of what it says ("…黑色衬衫配
# 黑色纽扣。纽扣不能更换。" for "衬衫的扣子可以换吗？", whose 扣子 the passage calls 纽扣).
_LIMIT = re.compile(
    r"\b(?:cannot|can't|not|no longer|never)\b|不能|不可以|不会|不得|不包括|不适用|不接受|不再",
    re.IGNORECASE,
)


def _with_exceptions(picked: list[int], sentences: list[str]) -> list[int]:
    """The picked sentences plus the one right after each when it states an exception
    or a limit ("皮革商品例外：我们不维修皮革制品。", "Gold members are the exception",
    a negated rule such as "纽扣不能更换。"):
    a rule quoted without its exception is a false statement, whatever the length cap
    says. The question's words need not be in it ("两年内什么都免费修，皮夹克也行吧？"
    shares no word with "皮革"), which is why it was left out."""
    out = set(picked)
    for i in picked:
        after = sentences[i + 1] if i + 1 < len(sentences) else ""
        if after and (is_qualified(after) or _EXCEPTION.search(after) or _LIMIT.search(after)):
            out.add(i + 1)
        if i > 0 and _PRONOUN_OPENING.match(sentences[i]):
            # "it is the only washing and cleaning advice we give" says nothing without
            # "Follow the care label sewn into each item;" before it: what "it" is.
            out.add(i - 1)
    return sorted(out)


# A sentence or clause that opens on a pronoun: what it is about was said just before.
_PRONOUN_OPENING = re.compile(
    r"^\W*(?:(?:it|it's|its|they|they're|their|them|this|that|these|those)\b|它们|它|这些)",
    re.IGNORECASE,
)


def _filler_pair(token: str) -> bool:
    return (
        len(token) == 2
        and ktext.has_cjk(token)
        and any(ch in ktext.ZH_FILLER_CHARS for ch in token)
        and token not in ktext.question_keywords(token)
    )


def passage_extract(question: str, passages: list[str], *, max_chars: int) -> str:
    """The sentences of one passage that share most keywords with the question, in
    their own order, up to ``max_chars``: an answer grounded by construction (the
    widget shows the passage's title and link under it, as a citation).
    ``passages`` are best first; the first wins ties."""
    from .lexicon import expand_tokens

    # The question's words and the shop's other words for them (the passage says
    # "shipping" where the shopper said "postage").
    # Not a Chinese character pair that spans a particle ("恤有" of "T恤有纯棉的吗"):
    # it is no word, and it made "T恤有S到XXL码" outscore the material section.
    wanted = {t for t in expand_tokens(ktext.index_tokens(question)) if not _filler_pair(t)}
    best: tuple[int, list[str]] | None = None
    for text in passages:
        sentences = [s.strip() for s in _SENTENCE.split(" ".join(text.split())) if s.strip()]
        scored = [(len(wanted & set(ktext.index_tokens(s))), i) for i, s in enumerate(sentences)]
        ranked = [x for x in sorted(scored, key=lambda x: (-x[0], x[1])) if x[0] > 0]
        picked: list[int] = []
        size = 0
        for _overlap, i in ranked:
            if picked and size + len(sentences[i]) > max_chars:
                break
            picked.append(i)
            size += len(sentences[i])
        # The question's distinct words the picked sentences cover: a sum would let a
        # passage that repeats "gift card" in three sentences beat the one that says
        # when gift cards expire (the demo's "do gift cards expire?" got the payment
        # passage). Ties keep the earlier, better-retrieved passage.
        score = len(wanted & {t for i in picked for t in ktext.index_tokens(sentences[i])})
        if picked and (best is None or score > best[0]):
            best = (score, [sentences[i] for i in sorted(_with_exceptions(picked, sentences))])
    if best is None:
        return " ".join(passages[0].split())[:max_chars] if passages else ""
    joiner = "" if ktext.has_cjk(" ".join(best[1])) else " "
    return joiner.join(best[1])
