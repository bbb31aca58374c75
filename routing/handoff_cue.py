"""Whether a message names a person, a team, support or a bot at all: the cheap
first check of the handoff recogniser (routing/handoff_detect.py). A message without
such a word never reaches the vetoes or the scorer."""

from __future__ import annotations

import re

# Any word for a person, a team, support or a bot (EN), or 人/客服/店员... (ZH). A
# request for a person names one; checked on every request in the examples and the
# dev set (tests/routing/test_handoff.py).
_CUE_RE = re.compile(
    r"\b(?:humans?|person|persons|people|agents?|reps?|representatives?|staff|someone|"
    r"somebody|anyone|anybody|operators?|managers?|supervisors?|boss|owners?|colleagues?|"
    r"team|employees?|support|service|care|real|live|living|actual|bots?|robots?|"
    r"automated|transfer\w*|escalat\w*|specialists?|call|contact|reach|talk|speak|chat|"
    # Callbacks, a department, someone in charge, a misspelt person.
    r"callback|ring|phone|telephone|e-?mail|department|dept|sales|billing|accounts|"
    r"refunds|returns|warranty|technical|in charge|senior|queue|line|whoever|"
    r"hu\w{2,4}|repr?s\w*|agn\w*|agen\w*|opera\w*"
    r")\b|人|客服|店员|员工|职员|专员|掌柜|小二|经理|主管|领导|老板|店长|负责人|售后|机器|"
    r"电话|回电|打给我|联系我|部门|同事|销售|财务|技术支持|管事|说了算|拍板|值班|微信"
)

# Words for a person the first pattern lacks: an advisor or an expert, 上级 (one's
# superior), 转接/接线 (to put through). Not before round 11 of the vetoes (``upto``).
_CUE_EXTRA_RE = re.compile(
    r"\b(?:advis[oe]rs?|consultants?|experts?|hoo?mans?|hum+ans?)\b|上级|转接|接线|人呢"
)
# Misspelt words for a person or for speaking, one edit away (two in the long ones):
# "sombody", "spaek", "servise", "persn" (the cue only lets the scorer look).
_FUZZY_CUE_WORDS = (
    "human",
    "person",
    "agent",
    "someone",
    "somebody",
    "anyone",
    "anybody",
    "representative",
    "service",
    "support",
    "operator",
    "manager",
    "supervisor",
    "speak",
    "talk",
    "staff",
    "customer",
)
# Real words one edit from those: no misspelling ("stuff" was the seed data's one hit).
_FUZZY_NOT = frozenset(
    [
        "stuff",
        "stiff",
        "tall",
        "task",
        "tale",
        "tail",
        "take",
        "sneak",
        "steak",
        "speck",
        "manage",
        "managed",
        "manages",
        "custom",
        "customs",
        "operate",
        "operated",
        "operates",
        "supervise",
        "supervised",
        "representation",
        "humid",
    ]
)
_WORD_RE = re.compile(r"[a-z]{4,}")

# Words with 人工/真人/机器 that name no person (the handoff rule's exceptions too).
_NOT_A_PERSON_RE = re.compile(
    r"人工(?:智能|费|合成|草|缝|成本|湖|降|制|材|皮|呼吸|授|心|关节|种植|养殖|繁殖|造|审核)|人造|"
    # A fee or a cost of labour ("人工安装费"), checking by hand ("人工检查").
    r"人工[\u4e00-\u9fff]{0,3}?(?:费|成本)|人工(?:检查|检测|核对|质检|分拣|审批|复核|验货)|"
    r"真人(?:秀|版|大小|尺寸|模特|发)|机器(?!人)"
)


def handoff_cue(normalised: str, *, upto: int | None = None) -> bool:
    """Whether the message names a person, a team, support or a bot at all (``upto``: as
    in ``handoff_vetoes.handoff_veto``: the extra words and misspelt forms count from
    round 11)."""
    text = _NOT_A_PERSON_RE.sub(" ", normalised)
    if _CUE_RE.search(text) is not None:
        return True
    if upto is not None and upto < 11:
        return False
    return _CUE_EXTRA_RE.search(text) is not None or any(
        _near(word, target)
        for word in _WORD_RE.findall(text)
        if word not in _FUZZY_NOT
        for target in _FUZZY_CUE_WORDS
    )


def _near(word: str, target: str) -> bool:
    """Within one edit (an insertion, deletion, substitution or swap of neighbours) of
    ``target``, or two for a target of 7 letters or more; the same word is no match
    (the cue regex had it)."""
    limit = 2 if len(target) >= 7 else 1
    if word == target or abs(len(word) - len(target)) > limit or word[0] != target[0]:
        return False
    previous2: list[int] = []
    previous = list(range(len(target) + 1))
    for i, a in enumerate(word, 1):
        row = [i]
        for j, b in enumerate(target, 1):
            cost = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a != b))
            if i > 1 and j > 1 and a == target[j - 2] and word[i - 2] == b:
                cost = min(cost, previous2[j - 2] + 1)
            row.append(cost)
        previous2, previous = previous, row
    return previous[-1] <= limit
