"""Shopper-style questions for one section of an article, written at ingestion (doc2query).

Two sources, both cheap enough for a two-core machine:

- the section's structure, for any shop: its heading asked several ways, short and
  long; a question per kind of value it states (a price, a duration, a percentage); the
  shop's own words (``SynonymSet`` rows): another wording for each heading word that has
  an equivalent, and an instance question for each narrower term whose broader term the
  section names ("Lyon" under "France") and each kind of goods when the section's rule
  is about items in general;
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


# How anyone asks about a topic, per language: "{t}" is the section's topic. Few and
# short: a frame every section shares ("How does ... work?") would make every section
# look alike to a question asked in that frame.
_WORDINGS = {
    "en": ("{t}?", "Tell me about {t}"),
    "zh": ("{t}？", "{t}怎么说？"),
}
# A question per kind of value the section states.
_VALUE_WORDINGS = {
    "en": {
        "money": "How much does {t} cost?",
        "duration": "How long does {t} take?",
        "percent": "What percentage is {t}?",
        "polarity": "Is {t} possible?",
    },
    "zh": {
        "money": "{t}多少钱？",
        "duration": "{t}需要多久？",
        "percent": "{t}是百分之多少？",
        "polarity": "{t}可以吗？",
    },
}
# A case the section's rule covers: "{x}" is the narrower term, "{q}" the section's
# question (its heading as a question, or its topic).
# Never the term alone ("What about Lyon?"): that would match every section naming it.
_INSTANCES = {"en": ("{x}: {q}",), "zh": ("{x}：{q}",)}

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
    """The questions the section's structure and the shop's words give (no model)."""
    lang = language if language in _WORDINGS else "en"
    t = topic(section)
    if not t:
        return []
    asked = heading_question(section)
    is_question = asked.endswith(("?", "？"))
    inner = t if lang == "zh" else _lower(t)
    question = asked if is_question else _WORDINGS[lang][0].format(t=t)
    out: list[str] = [question]
    if not is_question:
        # A heading that names a topic ("Gift wrapping"): asked about, and asked for
        # each kind of value the section states. A heading that is a question already
        # says how it is asked.
        out += [w.format(t=inner) for w in _WORDINGS[lang][1:]]
        kinds = {v.kind for v in kvalues.section_values(section.text, heading=section.heading)}
        out += [_VALUE_WORDINGS[lang][k].format(t=inner) for k in kvalues.KINDS if k in kinds]
    for other in _equivalent_topics(asked or t, lang, words):
        out.append(other if other.endswith(("?", "？")) else _WORDINGS[lang][0].format(t=other))
    made = [Generated(q, lang, WORDING) for q in out]
    for term in _instance_terms(section, lang, words)[:MAX_INSTANCES]:
        made += [Generated(w.format(q=question, x=term), lang, INSTANCE) for w in _INSTANCES[lang]]
    return made


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
    section: ingest.Section, lang: str, words: list[shop_words.WordSet]
) -> list[str]:
    """Narrower terms whose broader term the section names, and the kinds of goods when
    the section's rule is about items in general, in the shop's own words."""
    zh = lang == "zh"
    material = f"{section.heading} {section.text}"
    keys = _own(material, zh=zh)
    out: list[str] = []
    for s in words:
        if s.language != lang:
            continue
        if s.kind == shop_words.BROADER and any(
            _names(target, material, keys, zh=zh) for target in s.target
        ):
            out += [x for x in s.terms if not _names(x, material, keys, zh=zh)]
    general = {w for w in ktext.GOODS_IN_GENERAL if ktext.has_cjk(w) == zh}
    if keys & _own(" ".join(general), zh=zh):
        for s in words:
            if s.language == lang and s.kind == shop_words.GOODS:
                out += [x for x in s.terms if not _names(x, material, keys, zh=zh)]
    return list(dict.fromkeys(out))


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
