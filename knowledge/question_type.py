"""What kind of question a message is: a question at all (``is_question``), one
answered by yes or no (``is_yes_no``), one asking what, how, when... (``is_wh``), or a
statement the shopper wants confirmed (``is_tag_question``: "..., right?", "…对吧？").

The three detectors are built from the same word lists and differ on purpose:
``is_question`` is routing's broad test ("is this asked at all, or a request?"), the
other two are the coverage and entailment checks' narrow ones (see ``is_question``).
"""

from __future__ import annotations

import re

from . import text as ktext

# Words a question opens with, and the Chinese question words found anywhere in one.
WH_EN = ("what", "how", "when", "where", "which", "who", "why")
AUXILIARIES_EN = (
    "can",
    "could",
    "do",
    "does",
    "did",
    "is",
    "are",
    "was",
    "will",
    "would",
    "should",
)
WH_ZH = ("什么", "怎么", "怎样", "如何", "多少", "多久", "多长", "哪", "几")
# Words a shopper ends a statement with to have it confirmed.
TAGS_EN = ("right", "yes", "correct", "true", "yeah", "no")
TAGS_ZH = ("吧", "对吧", "是吧", "对不对", "是不是")


def _alternatives(words: tuple[str, ...]) -> str:
    return "|".join(words)


_QUESTION = re.compile(
    r"[?？]\s*$|^\s*("
    + _alternatives(WH_EN + AUXILIARIES_EN + ("if", "any", "anything"))
    + r")\b|"
    + _alternatives(("吗", "呢", *WH_ZH, "能不能", "可不可以", "是否", "有没有")),
    re.IGNORECASE,
)
_WH_EN = re.compile(
    r"^\s*(" + _alternatives((*WH_EN, "what's", "whats", "whom", "whose")) + r")\b",
    re.IGNORECASE,
)
_YES_NO_EN = re.compile(
    r"^\s*("
    + _alternatives((*AUXILIARIES_EN, "were", "shall", "may", "might", "must", "have", "has", "am"))
    + r")\b|,?\s*("
    + _alternatives(TAGS_EN)
    + r")\s*[?？]?\s*$",
    re.IGNORECASE,
)
_WH_ZH = re.compile(_alternatives((*WH_ZH, "多大", "为什么", "谁", "啥")))
_YES_NO_ZH = re.compile(
    r"("
    + _alternatives(("吗", *TAGS_ZH, "能不能", "可不可以", "有没有", "会不会"))
    + r")\s*[?？]?\s*$"
)
_WH_ANYWHERE_EN = re.compile(
    r"\b(" + _alternatives((*(w for w in WH_EN if w != "who"), "whats")) + r")\b",
    re.IGNORECASE,
)
_TAG = re.compile(
    r",?\s*("
    + _alternatives(TAGS_EN)
    + r")\s*[?？]?\s*$|("
    + _alternatives(TAGS_ZH)
    + r")\s*[?？]?\s*$",
    re.IGNORECASE,
)


def is_question(text: str) -> bool:
    """Whether the message asks something at all, rather than requests or states it
    ("how long does a refund take", "退款要多久"; not "I want to cancel"): the router's
    test (``routing.knowledge_route``) before a message may leave an order flow for L2.

    Broader than ``is_yes_no`` and ``is_wh``, and in any language at once: it takes
    a message ending on "?"/"？" whatever its words; an English one opening on a wh-word
    (what, how, when, where, which, who, why), on one of the common auxiliaries (can,
    could, do, does, did, is, are, was, will, would, should) or on "if", "any",
    "anything"; and one with 吗, 呢, 是否, 能不能, 可不可以, 有没有 or a Chinese
    wh-word (什么, 怎么, 怎样, 如何, 多少, 多久, 多长, 哪, 几) anywhere. Unlike those two it
    does not take, without a question mark, an English message opening on were, shall,
    may, might, must, have, has or am, ending on a tag (", right"), or with a wh-word
    only later in it ("at what total ..."); nor a Chinese one ending on 吧, 对吧, 是吧,
    是不是, 对不对 or 会不会, or asking only with 多大, 谁 or 啥."""
    return bool(_QUESTION.search(text))


def is_wh(question: str) -> bool:
    """A question asking what, how, when, where, which or why (anywhere in it: "at
    what total do I stop paying for postage?"), and not a yes/no question."""
    if is_yes_no(question):
        return False
    pattern = _WH_ZH if ktext.has_cjk(question) else _WH_ANYWHERE_EN
    return bool(pattern.search(question))


def is_yes_no(question: str) -> bool:
    """A question answered by yes or no ("can I pause my subscription?", "礼品卡永久有效
    对吧？"), not one asking what, how, when ("how long does a refund take?")."""
    text = question.strip()
    if ktext.has_cjk(text):
        return bool(_YES_NO_ZH.search(text)) and not _WH_ZH.search(text)
    return bool(_YES_NO_EN.search(text)) and not _WH_EN.search(text)


def is_tag_question(question: str) -> bool:
    """A statement the shopper asks to have confirmed ("free shipping kicks in at $75,
    right?", "…对吧？"): it states the shopper's own figure or claim."""
    return bool(_TAG.search(question))
