"""Shopper-style questions for one section of an article, written at ingestion (doc2query).

Two sources, both cheap enough for a two-core machine:

- the section's structure, for any shop, in the forms of ``knowledge.question_forms``:
  its heading as asked; its topic asked for each kind of value it states (a price "how
  much", a duration "how long"); its rules as yes/no questions; a question for each
  place it names; and, from the shop's own words (``SynonymSet`` rows), another wording
  for each heading word that has an equivalent and an instance question for each
  narrower term whose broader term the section names ("Lyon" under "France") and each
  kind of goods when the section's rule is about items in general;
- with a model role set (``TIERDESK_KB_QUESTIONS_ROLE``), one call that writes further
  wordings and cases the rule covers, in English and Chinese.

The templates are how anyone asks in the language, never a shop's words: those come from
the section and the shop's synonym sets. The questions only steer matching (retrieval
and cards); whether a section answers a question is still decided by the coverage and
entailment gates, so a loose question can cost a match, never a false answer.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from . import ingest, shop_words
from . import question_forms as forms
from . import text as ktext
from . import values as kvalues
from .card_questions import heading_question, speculative

logger = logging.getLogger(__name__)

WORDING = "wording"
INSTANCE = "instance"
MAX_CHARS = 200
# At most this many instance questions per section from the synonym sets: a broad term
# ("Europe") may cover dozens of narrower ones, and every one is a vector to compare.
MAX_INSTANCES = 8


@dataclass(frozen=True)
class Generated:
    text: str
    language: str
    role: str  # WORDING | INSTANCE


# How many yes/no questions a section's rules give: the first rules of a section are
# its main ones, and every question is a vector to compare.
MAX_RULES = 3

_PROMPT = {
    "en": (
        "Here is a section of a shop's help article.\n\n{heading}\n{text}\n\n"
        "Write questions shoppers would type that this section answers, one per line:\n"
        "three lines starting with Q: (different wordings, short and long),\n"
        "three lines starting with C: (each about one specific case the section's rule "
        "covers: a place, a product, a situation),\n"
        "two lines starting with ZH: (questions in Chinese)."
    ),
    "zh": (
        "下面是网店帮助文章的一段。\n\n{heading}\n{text}\n\n"
        "写出顾客会问、这段文字能回答的问题，每行一个：\n"
        "三行以 Q: 开头（不同说法，有短有长），\n"
        "三行以 C: 开头（每个问这段规定适用的一个具体情况：地点、商品或情形），\n"
        "两行以 EN: 开头（英文问题）。"
    ),
}
_LINE = re.compile(r"^\s*(?:\d+[.)、]\s*)?(Q|C|ZH|EN)\s*[:：]\s*(.+)$", re.IGNORECASE)


def topic(section: ingest.Section) -> str:
    """What the section is about, as a shopper would name it: its heading's last part
    without a question mark, or its first sentence's first content words."""
    head = heading_question(section).rstrip("?？ ").strip()
    if head:
        return head
    words = ktext.content_words(section.text)[:5]
    joiner = "" if words and ktext.has_cjk(words[0]) else " "
    return joiner.join(words)


def _lower(t: str) -> str:
    # "Gift Wrapping" inside a sentence, but acronyms ("EU", "PayPal") as written.
    return " ".join(w.lower() if w[:1].isupper() and w[1:].islower() else w for w in t.split())


def structural(
    section: ingest.Section, *, language: str, words: list[shop_words.WordSet]
) -> list[Generated]:
    """The questions the section's structure and the shop's words give (no model):
    its heading as asked, its topic asked for each kind of value the section states,
    its rules as yes/no questions, and the places and cases it names or covers."""
    lang = language if language in forms.VALUE_FORMS else "en"
    t = topic(section)
    if not t:
        return []
    asked = heading_question(section)
    is_question = bool(asked) and forms.asks(asked, lang)
    mark = "？" if lang == "zh" else "?"
    question = (asked if asked.endswith(("?", "？")) else asked + mark) if is_question else t + mark
    inner = forms.core(t if lang == "zh" else _lower(t), lang)
    values = kvalues.section_values(section.text, heading=section.heading)
    # The kinds of value asked about the topic: those stated about the heading's
    # subject, or that the heading itself names ("Shipping costs"); a duration stated
    # about something else ("unopened items within 30 days" under "Opened products")
    # is not how the topic is asked.
    about = kvalues.subject_words(asked or t)
    kinds = {v.kind for v in values if _stated_about(v, about)}
    kinds |= forms.heading_kinds(asked or t) & {v.kind for v in values}
    out: list[str] = [question]
    if not is_question:
        # A heading that names a topic ("Gift wrapping") is asked for each kind of value
        # the section states; a heading that is a question says how it is asked.
        out += forms.value_questions(inner, kinds, lang)
    plain = {v.sentence for v in values if v.kind == "polarity"}
    rules = list(dict.fromkeys(v.sentence for v in values))
    asked_rules = 0
    for sentence in rules:
        made_rule = forms.rule_questions(sentence, lang, plain=sentence in plain)
        out += made_rule
        asked_rules += bool(made_rule)
        if asked_rules >= MAX_RULES:
            break
    for other in _equivalent_topics(asked or t, lang, words):
        out.append(other if other.endswith(("?", "？")) else other + mark)
    made = [Generated(q, lang, WORDING) for q in out]
    # Places and cases: a rule naming a list of places is asked for each alone; a place
    # named in a sentence about sending is asked the delivery questions.
    named = forms.places(section.text)
    terms = _instance_terms(section, lang, words, named)[:MAX_INSTANCES]
    instances: list[str] = []
    for place in [*named, *(x for x, is_place in terms if is_place)]:
        asked_alone = forms.one_place(out, place, named)
        if asked_alone:
            instances += asked_alone
        elif forms.sends(section.text, place, lang) or place not in named:
            instances += forms.place_questions(place, kinds, lang)
    for term, is_place in terms:
        if not is_place:
            instances += forms.case_questions(term, inner, kinds, lang)
    made += [Generated(q, lang, INSTANCE) for q in instances]
    return made


def _stated_about(value: kvalues.Value, about: frozenset[str]) -> bool:
    """Whether a value is stated about every word of the heading's subject (a Chinese
    word jieba keeps whole in the heading may stand cut in the sentence)."""
    return bool(about) and all(
        w in value.subject or (ktext.has_cjk(w) and w in value.sentence) for w in about
    )


def _own(text: str, *, zh: bool) -> set[str]:
    if zh:
        return set(ktext.content_words(text))
    return {shop_words.stem(w) for w in ktext.content_words(text)}


def _names(term: str, material: str, material_keys: set[str], *, zh: bool) -> bool:
    keys = shop_words.term_keys(term, zh=zh)
    if not keys:
        return False
    if zh:
        return all(k in material for k in keys)
    return all(k in material_keys for k in keys)


def _equivalent_topics(t: str, lang: str, words: list[shop_words.WordSet]) -> list[str]:
    """The topic with one of its words swapped for the shop's equivalent term."""
    zh = lang == "zh"
    out: list[str] = []
    for s in words:
        if s.language != lang or s.kind != shop_words.EQUIVALENT:
            continue
        for term in s.terms:
            if zh:
                if term in t:
                    out += [t.replace(term, other) for other in s.terms if other != term]
                continue
            pattern = re.compile(rf"\b{re.escape(term)}\b", re.IGNORECASE)
            if pattern.search(t):
                out += [pattern.sub(other, t, count=1) for other in s.terms if other != term]
    return list(dict.fromkeys(out))[:3]


def _instance_terms(
    section: ingest.Section, lang: str, words: list[shop_words.WordSet], places: list[str]
) -> list[tuple[str, bool]]:
    """Narrower terms whose broader term the section names, and the kinds of goods when
    the section's rule is about items in general, in the shop's own words; each with
    whether it is a place (its broader term is a place the section names)."""
    zh = lang == "zh"
    material = f"{section.heading} {section.text}"
    keys = _own(material, zh=zh)
    named_places = {p.lower() for p in places}
    out: dict[str, bool] = {}
    for s in words:
        if s.language != lang:
            continue
        targets = [t for t in s.target if _names(t, material, keys, zh=zh)]
        if s.kind == shop_words.BROADER and targets:
            is_place = any(t.lower() in named_places for t in targets)
            for x in s.terms:
                if not _names(x, material, keys, zh=zh):
                    out.setdefault(x, is_place)
    general = {w for w in ktext.GOODS_IN_GENERAL if ktext.has_cjk(w) == zh}
    if keys & _own(" ".join(general), zh=zh):
        for s in words:
            if s.language == lang and s.kind == shop_words.GOODS:
                for x in s.terms:
                    if not _names(x, material, keys, zh=zh):
                        out.setdefault(x, False)
    return list(out.items())


def drafted(section: ingest.Section, *, language: str, role: str) -> list[Generated]:
    """Further wordings and cases by a model (blocking); [] when it fails."""
    if not role:
        return []
    from inference.base import ChatMessage, GenerationRequest, InferenceError
    from inference.registry import get_backend

    lang = language if language in _PROMPT else "en"
    prompt = _PROMPT[lang].format(heading=section.heading, text=section.text[:1500])
    try:
        backend = get_backend(role)
        if getattr(backend, "chat", True):
            request = GenerationRequest(
                messages=(ChatMessage("user", prompt),), max_tokens=220, temperature=0.3, seed=11
            )
        else:
            request = GenerationRequest(prompt=prompt, max_tokens=220, temperature=0.3, seed=11)
        complete = getattr(backend, "complete", None)
        if complete is not None:
            raw, _usage = complete(request)
        else:
            raw = "".join(chunk.text for chunk in backend.stream(request))
    except InferenceError as exc:
        logger.warning("question drafting model failed: %s", exc)
        return []
    return parse(raw, section)


def parse(raw: str, section: ingest.Section) -> list[Generated]:
    """The model's usable lines: questions, not asking for an opinion, not too long."""
    out: list[Generated] = []
    for line in raw.splitlines():
        found = _LINE.match(line)
        if not found:
            continue
        tag, question = found.group(1).upper(), found.group(2).strip().strip('"“”')
        if not question or len(question) > MAX_CHARS or speculative(question):
            continue
        if not question.endswith(("?", "？")):
            continue
        role = INSTANCE if tag == "C" else WORDING
        out.append(Generated(question, ktext.language_detect(question), role))
    return out


def section_questions_write(
    section: ingest.Section, *, language: str, words: list[shop_words.WordSet], role: str
) -> list[Generated]:
    """Every generated question for the section, without duplicates (blocking)."""
    seen: set[str] = set()
    out: list[Generated] = []
    for q in [
        *structural(section, language=language, words=words),
        *drafted(section, language=language, role=role),
    ]:
        key = " ".join(q.text.lower().split())
        if key and key not in seen and len(q.text) <= MAX_CHARS:
            seen.add(key)
            out.append(q)
    return out
