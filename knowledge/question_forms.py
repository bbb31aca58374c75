"""How a shopper asks, per language: the question forms ``knowledge.doc2query`` fills
with what one section says.

A section's content decides the form: a price is asked "how much" (多少钱 / 要付多少),
a duration "how long" (多久 / 几天), a percentage "what percentage", a rule stated
without a figure as a yes/no ("Do you accept ...?", 你们接受…吗 / 能不能…), a place the
section names as "do you ship to ...?" (能送到…吗), and a case the rule covers (a
product, a place in the shop's synonym sets) with the section's topic. Every form is
how anyone asks in the language; the words filled in come from the section and the
shop's synonym sets, never from this module.
"""

from __future__ import annotations

import re

from . import named_case
from . import text as ktext

# Words a heading adds to its topic that a shopper leaves out when asking for the
# value ("Shipping costs" is asked "how much does shipping cost?"; 配送时间 is asked
# 配送要多久). General heading words of either language, no shop's.
_HEADING_TAIL_EN = re.compile(
    r"\s+(?:policy|policies|information|info|details|guide|faqs?|rules|terms|"
    r"times?|costs?|fees?|prices?|pricing|rates?|charges?|options|overview)$",
    re.IGNORECASE,
)
_HEADING_TAIL_ZH = re.compile(
    r"(?:政策|说明|须知|规定|条款|信息|指南|常见问题|时间|时效|费用|价格|收费|标准|方式|流程|规则|介绍)$"
)
# A heading that already asks ("配送需要多久", "Can I change my order"): it is a
# question as written, however punctuated.
_ASKS_ZH = re.compile(
    r"多久|多少|几天|几[个件次]|吗$|怎么|怎样|如何|什么|哪[里儿个些]|能否|是否|可否"
)
_ASKS_EN = re.compile(
    r"^(?:how|what|when|where|which|who|why|can|could|do|does|did|is|are|will|may|should)\b",
    re.IGNORECASE,
)

VALUE_FORMS: dict[str, dict[str, tuple[str, ...]]] = {
    "en": {
        "money": ("How much does {t} cost?", "How much is {t}?", "What do I pay for {t}?"),
        "duration": ("How long does {t} take?", "How many days does {t} take?"),
        "percent": ("What percentage is {t}?", "How much is {t}?"),
    },
    "zh": {
        "money": ("{t}多少钱？", "{t}要付多少钱？", "{t}收费吗？"),
        "duration": ("{t}要多久？", "{t}要几天？"),
        "percent": ("{t}是百分之多少？", "{t}是多少？"),
    },
}
# About the topic itself when the section states no value to ask for.
TOPIC_FORMS: dict[str, tuple[str, ...]] = {"en": ("Tell me about {t}",), "zh": ("{t}有什么规定？",)}
# A place the section names (or the shop's synonym sets put under one it names), in a
# sentence about sending things there and not already asked by one of its rules.
PLACE_FORMS: dict[str, dict[str, tuple[str, ...]]] = {
    "en": {
        "send": ("Do you ship to {x}?", "Can you deliver to {x}?"),
        "duration": ("How long does delivery to {x} take?",),
        "money": ("How much is shipping to {x}?",),
    },
    "zh": {
        "send": ("能送到{x}吗？", "{x}能发货吗？"),
        "duration": ("寄到{x}要几天？",),
        "money": ("寄到{x}要多少钱？",),
    },
}
# A case the rule covers that is not a place (a product, a kind of goods).
CASE_FORMS: dict[str, dict[str, tuple[str, ...]]] = {
    "en": {
        "money": ("How much is {t} for a {x}?",),
        "duration": ("How long does {t} take for a {x}?",),
        "other": ("Does {t} apply to a {x}?",),
    },
    "zh": {
        "money": ("{x}的{t}多少钱？",),
        "duration": ("{x}{t}要多久？",),
        "other": ("{x}可以{t}吗？", "{x}能不能{t}？"),
    },
}
_SENDING = {
    "en": re.compile(r"\b(?:ship|shipp|deliver|dispatch|send|sent|post|courier)", re.IGNORECASE),
    "zh": re.compile(r"送|寄|发货|发往|配送|运往|快递|邮"),
}


def asks(heading: str, language: str) -> bool:
    """Whether a heading is already a question (whatever its punctuation)."""
    if heading.endswith(("?", "？")):
        return True
    if language == "zh":
        return bool(_ASKS_ZH.search(heading))
    return bool(_ASKS_EN.match(heading))


def core(topic: str, language: str) -> str:
    """The topic as a shopper names it inside a question: without the heading words
    that name the kind of value ("Shipping costs" -> "shipping", 配送时间 -> 配送)."""
    if language == "zh":
        short = _HEADING_TAIL_ZH.sub("", topic)
        return short if len(short) >= 2 else topic
    short = _HEADING_TAIL_EN.sub("", topic).strip()
    return short or topic


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


# What a heading's own words say it is about: a price or a duration ("Shipping costs",
# 配送时间), whatever else the section's sentences state.
_HEADING_KIND = {
    "money": re.compile(
        r"\b(?:costs?|fees?|prices?|pricing|rates?|charges?|how much)\b|费|价|多少钱", re.IGNORECASE
    ),
    "duration": re.compile(
        r"\b(?:times?|how long|when|days?|weeks?)\b|时间|时效|多久|几天|多长", re.IGNORECASE
    ),
}


def heading_kinds(heading: str) -> set[str]:
    return {kind for kind, pattern in _HEADING_KIND.items() if pattern.search(heading)}


def value_questions(t: str, kinds: set[str], language: str) -> list[str]:
    forms = VALUE_FORMS[language]
    out = [
        f.format(t=t)
        for kind in ("money", "duration", "percent")
        if kind in kinds
        for f in forms[kind]
    ]
    return out or [f.format(t=t) for f in TOPIC_FORMS[language]]


def sends(text: str, place: str, language: str) -> bool:
    """Whether a sentence of the section sends things to ``place``."""
    return any(
        place in sentence and _SENDING[language].search(sentence)
        for sentence in ktext.sentences(text, clauses=True)
    )


def place_questions(x: str, kinds: set[str], language: str) -> list[str]:
    forms = PLACE_FORMS[language]
    out = list(forms["send"])
    out += [f for kind in ("duration", "money") if kind in kinds for f in forms[kind]]
    return [f.format(x=x) for f in out]


def case_questions(x: str, t: str, kinds: set[str], language: str) -> list[str]:
    """A kind of goods the rule covers, asked with the topic without its words for
    goods in general ("returning items" -> "How long does returning take for a
    teapot?")."""
    forms = CASE_FORMS[language]
    if language == "zh":
        short = t
        for word in ktext.GOODS_IN_GENERAL:
            short = short.replace(word, "") if ktext.has_cjk(word) else short
        t = short if len(short) >= 2 else t
    else:
        t = " ".join(w for w in t.split() if w.lower() not in ktext.GOODS_IN_GENERAL) or t
    chosen = [f for kind in ("money", "duration") if kind in kinds for f in forms[kind]]
    return [f.format(x=x, t=t, T=_cap(t)) for f in chosen or forms["other"]]


# -- places a section names ---------------------------------------------------------------------
def places(text: str) -> list[str]:
    """The place names a section's text states (``knowledge.named_case``: the same
    reading as a shopper's question gets), at most a handful; not an abbreviation
    the sentence splitter cut ("P.O" of "P.O. box")."""
    return [p for p in named_case.places_in(text) if "." not in p][:6]


def one_place(questions: list[str], place: str, named: list[str]) -> list[str]:
    """The section's own questions that name a list of places, asked about ``place``
    alone ("Do you ship to France, Belgium and the Netherlands?" -> "Do you ship to
    Belgium?"); ``place`` may be one of them or a narrower place (Lyon for France)."""
    if not named:
        return []
    name = "|".join(re.escape(n) for n in sorted(named, key=len, reverse=True))
    run = re.compile(
        rf"(?:the\s+)?(?:{name})(?:\s*(?:,|，|、|和|及|与|或|\band\b|\bor\b|&)\s*"
        rf"(?:the\s+)?(?:{name}))*"
    )
    return [run.sub(place, q, count=1) for q in questions if run.search(q)]


# -- a rule as a yes/no question ----------------------------------------------------------------
_EN_WE = re.compile(
    r"^(?:we|our shop|our store)\s+(?:(?:do not|don't|does not|cannot|can't|can not|can|"
    r"will not|won't|will|never|only|always|also|currently|gladly|happily)\s+)*(?P<rest>.+)$",
    re.IGNORECASE,
)
_EN_YOU = re.compile(
    r"^(?:you|customers?|shoppers?|members?)\s+(?:(?:do not|don't|cannot|can't|can not|can|"
    r"may not|may|must not|must|will not|won't|will|never|only|always|also)\s+)*(?P<rest>.+)$",
    re.IGNORECASE,
)
_EN_MODAL = re.compile(
    r"^(?P<x>.{3,60}?)\s+(?:can ?not|can't|can|may not|may|must not|will not|won't|will)\s+"
    r"(?:not\s+|only\s+|also\s+)*(?P<rest>.+)$",
    re.IGNORECASE,
)
_EN_BE = re.compile(
    r"^(?P<x>.{3,60}?)\s+(?P<be>is|are)(?:\s+not|n't)?\s+(?:only\s+|also\s+|always\s+)*(?P<rest>.+)$",
    re.IGNORECASE,
)
_EN_TAIL = re.compile(r"\s+(?:only|too|as well)$", re.IGNORECASE)
# Chinese: the shop speaking ("我们", "本店") or to the shopper ("您"), and the modal or
# negation a yes/no turns on.
_ZH_WE = re.compile(r"^(?:我们|本店|本公司|我司|商城|小店)")
_ZH_YOU = re.compile(r"^(?:您|你)(?!们)")
# (Not a bare 会, which starts 会员; not the 能 of 功能 or 可能, nor 只能/才能: those
# sentences are asked as written.)
_ZH_MODAL = re.compile(
    r"不能|不可以|不可|无法|不予|不会|不再|暂不|可以|能够|(?<![功可性技智体才只仅])能"
)
_ZH_NOT = re.compile(r"^(?:不|没有|只|仅|也|都|均|暂|已|还)+")
MAX_RULE_CHARS = {"en": 90, "zh": 30}
_ZH_CONDITION = re.compile(r"^(?:如果?|若|当|假如|如需|如对|在)|(?:后|时|前|的话|之后|以后|期间)$")
_CUT_AT_ABBREVIATION = re.compile(r"\b[A-Za-z]\.[A-Za-z]\.?$")


def _en_rule(clause: str) -> list[str]:
    clause = _EN_TAIL.sub("", clause.rstrip(".!;: "))
    if m := _EN_WE.match(clause):
        rest = m["rest"]
        if be := re.match(r"(?:are|were)\s+(?:not\s+)?(.+)$", rest, re.IGNORECASE):
            return [f"Are you {be[1]}?"]
        return [f"Do you {rest}?", f"Can you {rest}?"]
    if m := _EN_YOU.match(clause):
        return [f"Can I {m['rest']}?"]
    if m := _EN_MODAL.match(clause):
        return [f"Can {_lower_first(m['x'])} {m['rest']}?"]
    if m := _EN_BE.match(clause):
        return [f"{_cap(m['be'].lower())} {_lower_first(m['x'])} {m['rest']}?"]
    return []


def _lower_first(text: str) -> str:
    first = text.split(" ", 1)[0]
    if first[1:].islower() or len(first) == 1:
        return text[:1].lower() + text[1:]
    return text


def _starts_with_verb(text: str) -> bool:
    import jieba.posseg

    ktext._jieba()
    first = next(iter(jieba.posseg.cut(text)), None)
    return first is not None and first.flag.startswith("v")


def _zh_rule(clause: str, *, plain: bool) -> list[str]:
    clause = clause.strip("。！!；;，, ")
    we = _ZH_WE.match(clause)
    speaker = we or _ZH_YOU.match(clause)
    rest = clause[speaker.end() :] if speaker else clause
    modal = _ZH_MODAL.search(rest)
    if modal and modal.start() <= len(rest) // 2 + 2:
        before, after = rest[: modal.start()], _ZH_NOT.sub("", rest[modal.end() :])
        if not after:
            return []
        head = before or ("你们" if we else "我")
        return [f"{head}能{after}吗？", f"{head}能不能{after}？"]
    rest = _ZH_NOT.sub("", rest)
    if len(rest) < 2:
        return []
    if we:
        # 能不能 asks for a verb: "能不能提供…", not "能不能商品…".
        return [f"你们{rest}吗？"] + ([f"能不能{rest}？"] if _starts_with_verb(rest) else [])
    # A statement with neither the shop speaking nor a modal is a yes/no only when it
    # states the rule without a figure ("运费由顾客承担" -> 运费由顾客承担吗？).
    return [f"{rest}吗？"] if plain else []


def rule_questions(sentence: str, language: str, *, plain: bool = True) -> list[str]:
    """A rule the section states without a figure, asked as a shopper's yes/no: "We do
    not accept opened products" -> "Do you accept opened products?"; 已拆封的口红不能退
    -> 已拆封的口红能退吗？ The form holds whichever way the rule answers. ``plain``: the
    sentence states no figure (a figure's sentence is asked only when it has the shop
    speaking or a modal: "Sealed tins may be returned within 30 days")."""
    out: list[str] = []
    parts = re.split(r"[，,；;：:]" if language == "zh" else r"[;:]|,\s+(?:but|and)\s+", sentence)
    for clause in parts:
        clause = " ".join(clause.split())
        if not clause or len(clause) > MAX_RULE_CHARS[language] or clause.endswith(("?", "？")):
            continue
        if _CUT_AT_ABBREVIATION.search(clause):
            continue  # a sentence split inside "P.O. box": not the whole rule
        if language == "zh" and _ZH_CONDITION.search(clause):
            continue  # "如需…", "…发货后": a condition, not the rule
        made = _zh_rule(clause, plain=plain) if language == "zh" else _en_rule(clause)
        if made:
            out += made
            break
    return out
