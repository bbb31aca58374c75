"""Typed values a section states, each with the subject it is stated about.

A money amount with its currency ("$4.99", "8美元"), a duration in days ("30 days",
"两周"), a percentage ("15%") and a yes/no ("we do not ship to P.O. boxes"). The
conflict check (``knowledge.conflicts``) compares the values two articles state about
one subject; the subject is the clause's content words (Snowball stems, jieba words for
Chinese) without the words every price or duration sentence has ("cost", "per",
"item", "days"), so "gift wrapping costs $5.99 per item" and "any item can be gift
wrapped at checkout for $4.99 per item" are both about {gift, wrap}.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import numerals
from . import text as ktext

KINDS = ("money", "duration", "percent", "polarity")

_AMOUNT = r"\d+(?:,\d{3})*(?:\.\d+)?"
_MONEY = re.compile(
    rf"(?P<cur>US\$|\$|USD\s?|€|£|¥|￥|RMB\s?)\s?(?P<num>{_AMOUNT})"
    rf"|(?P<num2>{_AMOUNT})\s?(?P<cur2>美元|元|块钱|块|dollars?\b|usd\b|rmb\b|euros?\b)",
    re.IGNORECASE,
)
_CURRENCY = {
    "$": "USD",
    "us$": "USD",
    "usd": "USD",
    "dollar": "USD",
    "dollars": "USD",
    "美元": "USD",
    "¥": "CNY",
    "￥": "CNY",
    "rmb": "CNY",
    "元": "CNY",
    "块": "CNY",
    "块钱": "CNY",
    "€": "EUR",
    "euro": "EUR",
    "euros": "EUR",
    "£": "GBP",
}
# Clauses: a sentence's parts a value is stated in ("standard costs $5.99, express
# $14.99" holds two prices about two things).
_CLAUSE = re.compile(r"[;,，；、]|\band\b|\bbut\b|\bwhile\b|\bwhereas\b|但是|而|；")

# Words every statement of a price, a duration or a rule has: they say nothing about
# what the value is for. Any shop, either language.
_GENERIC_EN = ktext.wordset(
    """
    cost costs costing price prices priced fee fees charge charges charged pay paid paying
    offer offers offered per each item items product products order orders checkout
    day days week weeks month months year years hour hours business working calendar
    within take takes taken usually typically normally around approximately about
    extra additional total amount flat just only always us we our customer customers
    free can able available provide provides option options service services every
    dollar dollars usd percent off
    """
)
_GENERIC_ZH = ktext.wordset(
    """
    费用 收费 价格 价钱 每件 每个 每单 每 件 商品 订单 元 美元 块 块钱
    天 日 工作日 个工作日 周 星期 月 个月 年 小时 以内 之内 内
    需要 大约 通常 一般 我们 顾客 提供 可以 免费 服务 额外
    """
)


@dataclass(frozen=True)
class Value:
    kind: str  # money | duration | percent | polarity
    amount: float  # money in its currency, a duration in days, a percentage, 1/0 for yes/no
    unit: str  # the currency ("USD"), "day", "%", "" for a yes/no
    text: str  # as the section writes it ("$4.99", "30 days", "do not ship")
    subject: frozenset[str]
    sentence: str

    def same_as(self, other: Value) -> bool:
        if self.kind != other.kind or self.unit != other.unit:
            return False
        if self.kind == "duration":
            return abs(self.amount - other.amount) <= 0.03 * max(self.amount, other.amount)
        return abs(self.amount - other.amount) < 1e-9

    def label(self) -> str:
        return self.text


def subject_words(clause: str) -> frozenset[str]:
    """What a clause is about: its content words, stemmed (English), without figures
    and without the words any price, duration or rule sentence has."""
    out: set[str] = set()
    for word in ktext.content_words(clause):
        if any(ch.isdigit() for ch in word):
            continue
        if ktext.has_cjk(word):
            if word not in _GENERIC_ZH and len(word) > 1:
                out.add(word)
        elif word not in _GENERIC_EN:
            out.add(ktext.stemmer().stemWord(word))
    return frozenset(out)


def question_subject(question: str) -> frozenset[str]:
    """A shopper's question's subject words, comparable with a value's subject."""
    return subject_words(question)


def _clauses(sentence: str) -> list[str]:
    return [c.strip() for c in _CLAUSE.split(sentence) if c and c.strip()]


def _money(clause: str) -> list[tuple[float, str, str, tuple[int, int]]]:
    out = []
    for m in _MONEY.finditer(clause):
        raw_cur = (m.group("cur") or m.group("cur2") or "").strip().lower()
        num = m.group("num") or m.group("num2")
        currency = _CURRENCY.get(raw_cur, _CURRENCY.get(raw_cur.rstrip("s"), ""))
        if not currency:
            continue
        out.append((float(num.replace(",", "")), currency, m.group(0).strip(), m.span()))
    return out


def _negated(clause: str) -> bool:
    from .entail import _negations

    return _negations(clause) % 2 == 1


def section_values(text: str, *, heading: str = "") -> list[Value]:
    """Every typed value of a section, each with its clause's subject (the sentence's,
    when the clause names nothing but the value; the heading's, when neither does)."""
    out: list[Value] = []
    heading_subject = subject_words(heading)
    for sentence in ktext.sentences(" ".join(text.split())):
        sentence = re.sub(r"^#+\s*", "", sentence).strip()
        if not sentence:
            continue
        sentence_n = numerals.zh_numerals_as_arabic(sentence)
        sentence_subject = subject_words(sentence_n)
        found_any = False
        for clause in _clauses(sentence_n):
            # A clause that names one word ("we refund $40") is about what its
            # sentence is about.
            subject = subject_words(clause)
            if len(subject) < 2:
                subject = sentence_subject or subject or heading_subject
            if not subject:
                continue
            money = _money(clause)
            rest = clause
            for amount, currency, raw, (start, end) in sorted(money, key=lambda x: -x[3][0]):
                out.append(Value("money", amount, currency, raw, subject, sentence))
                rest = rest[:start] + " " + rest[end:]
                found_any = True
            for q in numerals.quantities(rest):
                if q.unit == "%":
                    out.append(Value("percent", q.value, "%", f"{q.value:g}%", subject, sentence))
                    found_any = True
                elif q.unit in numerals.DAYS:
                    days = q.days() or 0.0
                    plural = "s" if q.value != 1 else ""
                    shown = f"{q.value:g} {q.unit}{plural}"
                    out.append(Value("duration", days, "day", shown, subject, sentence))
                    found_any = True
        # A yes/no is a sentence that states a rule without a figure: "we don't ship
        # to P.O. boxes" against "we ship to P.O. boxes".
        if not found_any and sentence_subject and not sentence.endswith(("?", "？")):
            negated = _negated(sentence_n)
            out.append(
                Value(
                    "polarity",
                    0.0 if negated else 1.0,
                    "",
                    "no" if negated else "yes",
                    sentence_subject,
                    sentence,
                )
            )
    return out


def subjects_match(a: frozenset[str], b: frozenset[str]) -> bool:
    """Two values are about one thing when their subjects name the same words. A word
    only one side has ("express" shipping, "Silver" members) is a qualifier: the two
    may both be right, so they are not compared."""
    return bool(a) and a == b
