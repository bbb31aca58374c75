"""A reply to a yes/no question: a yes, a no, or neither. EN and ZH, with the widget's
Yes/No button labels among them (tests/frontend/test_yes_no_words.py), and the ways a
shopper declines an offer ("no thanks", "不用了，谢谢")."""

from __future__ import annotations

import re

_YES = {
    "yes",
    "y",
    "yeah",
    "yep",
    "yup",
    "sure",
    "ok",
    "okay",
    "confirm",
    "confirmed",
    "do it",
    "yes please",
    "please do",
    "go ahead",
    "是",
    "是的",
    "确认",
    "好",
    "好的",
    "可以",
    "对",
    "嗯",
    "确定",
}
_NO = {
    "no",
    "n",
    "nope",
    "nah",
    "don't",
    "dont",
    "do not",
    "keep it",
    "never mind",
    "stop",
    "否",
    "不",
    "不要",
    "不用",
    "算了",
    "取消操作",
    "别",
    # Declining an offer ("pass you to a person?", "shall I start a return?").
    "no need",
    "not now",
    "not needed",
    "not really",
    "i'm good",
    "im good",
    "i'm fine",
    "all good",
    "不用了",
    "不需要",
    "不需要了",
    "不了",
    "不必",
    "不必了",
    "没事",
    "没事了",
    "先不用",
    "暂时不用",
    "不用麻烦了",
    "算了吧",
}
# Thanks or a please after the answer ("no thanks", "不用了，谢谢"): the answer is what
# comes before it.
_POLITE_TAIL = re.compile(
    r"(?:[\s,，、]*(?:(?<![a-z])(?:thanks?(?: you)?|thx|ty|please|cheers)|谢谢(?:你|您)?|谢了))+$"
)


def _norm_reply(text: str) -> str:
    return re.sub(r"[\s!.。！,，~]+$", "", text.strip().lower())


def is_yes(text: str) -> bool:
    t = _norm_reply(text)
    return t in _YES or t.startswith(("yes ", "yes,", "confirm ", "是的"))


def is_no(text: str) -> bool:
    t = _norm_reply(text)
    bare = _norm_reply(_POLITE_TAIL.sub("", t))
    return bare in _NO or t.startswith(("no ", "no,", "don't ", "不要"))
