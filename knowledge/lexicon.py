"""The shop's words: how shoppers name what the help articles name differently.

A shopper asks about "postage", a "coat", a "voucher" or 客服; the articles say
shipping, jacket, coupon, 员工. Retrieval (BM25 terms and the keyword share that marks
a passage relevant), the question-coverage check (does the passage hold what the
question asks about?) and the extract's choice of sentences look words up here too.

Two relations, both written once for the shop's domain (clothing, shoes and their
services: shipping, returns, refunds, gift cards, membership, pickup, repairs), from
the articles' vocabulary and the everyday words for it, not from any evaluation
question:

- ``SAME``: words a shopper uses for the same thing (each line a group; a word's
  alternatives are the other words of every group it is in, not transitively);
- ``BROADER``: a specific word and what a rule about it is stated for: a rule about
  "electronics" answers a question about phones, one about "someone else" a question
  about a husband; never the other way round.

The entailment check (``entail.claim_check``) uses neither: a generated sentence must
still say what the passage says in the passage's own terms, so a word in ``SAME`` can
make a question count as answered, never a claim count as backed. It reads a third,
much shorter relation instead, ``CLAIM_SAME`` (``claim_stem``): the few words a shop's
answers use interchangeably ("buy" backs "purchase"), each pair one more way for a
claim to pass. The two are kept apart on purpose: merging them would let every
question-side synonym back a claim.

Goods in general (items, products, clothes, 商品...) are ``text.GOODS_IN_GENERAL``.
"""

from __future__ import annotations

import re
from functools import cache

from . import numerals
from . import text as ktext

# English: one group per line (words, stemmed when read).
_SAME_EN = """
postage shipping delivery courier carriage
swap swapped switch exchange exchanged trade
money cash
fix mend repair
coupon voucher
promo discount coupon
shut close closing
collect pickup pick grab fetch
letters characters
cheaper cheap price
detach remove off
another different
shop store
jacket coat
trainers sneakers footwear shoes
denim jeans
pants trousers jeans
hem hemming shorten shortened hemmed
guarantee warranty guaranteed
waterproof rainproof rain watertight
refund reimburse reimbursement
expire expiry valid validity lapse
annual yearly
authenticator factor 2fa
bag backpack purse handbag
tee tshirt shirt
spend spent spending purchase purchases buy bought
collar neck
tips advice instructions
post posting posted mail mailing
hit reach reached qualify qualifies
next following
"""
# Chinese: the same, words as jieba cuts them.
_SAME_ZH = """
外套 夹克
快递 邮寄 寄 配送
加急 快速
运费 邮费
包邮 免运费
客服 员工 工作人员 店员
取件 取货 自提 提货 代取 取
包包 包 背包
修 修理 维修 修补
磨坏 磨损 损耗
裤脚 裤长
会员卡 会员
储蓄卡 借记卡 银行卡
过期 有效 有效期
优惠码 促销码
优惠券 代金券
下雨 雨天 防水
退钱 退款
钱 金额 费用
买 购买 消费 下单
鞋子 鞋 运动鞋 跑鞋
花 花钱 消费
刀 块 美元
太贵 太高
退点 退还 退回
店里 门店 实体店
没货 缺货 断货 无货
升上去 升级 升为 升
"""
# A specific word -> the words a rule covering it is stated with.
_BROADER_EN = """
phone phones laptop tablet headphones camera smartwatch: electronics device
husband wife partner friend sister brother mother father mom dad son daughter neighbour
neighbor colleague relative: someone else
amazon ebay walmart zalando: competitor
machine: wash
"""
_BROADER_ZH = """
手机 电脑 平板 耳机 相机: 电子产品 设备
老公 老婆 丈夫 妻子 朋友 家人 同事 邻居 妈妈 爸爸 孩子 室友: 他人 代取人
别家 别的店 其他店: 其他
皮包 皮夹克 皮鞋: 皮革
洗衣机 机洗: 洗
"""
# The shop's goods by kind: a rule stated for items, products or clothes in general
# covers them (the one hypernym every question about a product has).
_GOODS_EN = """
jacket coat fleece jeans denim trousers pants shirt shirts tshirt tee sweater hoodie
boots boot shoes sneakers trainers helmet backpack bag hat socks
"""
_GOODS_ZH = """
夹克 外套 抓绒 牛仔裤 裤子 衬衫 T恤 上衣 毛衣 卫衣 靴子 登山靴 鞋 鞋子 运动鞋 跑鞋
头盔 背包 包 包包 帽子 袜子
"""
# The entailment check's own relation: a stem (as ``ktext.index_tokens`` makes it, not
# stemmed again) and the stems that count as it in a claim.
CLAIM_SAME = """
purchas: buy bought
price: cost
fee: charg
ship: deliveri deliv arriv
return: send
wash: clean launder
pickup: pick
colour: color
买: 购买 购
退: 退货
配送: 送达 发货 运送
"""
_CLAIM_STEMS = {
    word: line.split(":")[0]
    for line in CLAIM_SAME.strip().splitlines()
    for word in line.split(":")[1].split()
}


def claim_stem(stem: str) -> str:
    """The stem a claim's word is compared as (``CLAIM_SAME``): "buy" -> "purchas",
    "退货" -> "退"; any other stem as it is."""
    return _CLAIM_STEMS.get(stem, stem)


def is_goods(word: str) -> bool:
    """A kind of the shop's goods ("sneakers", "夹克"), not goods in general."""
    if ktext.has_cjk(word):
        return word in _GOODS_ZH.split()
    return _stem(word) in {_stem(w) for w in _GOODS_EN.split()}


def _stem(word: str) -> str:
    tokens = ktext.index_tokens(word)
    return tokens[0] if tokens else word.lower()


def _groups(block: str, *, zh: bool) -> list[set[str]]:
    out = []
    for line in block.strip().splitlines():
        words = line.split()
        out.append({w if zh else _stem(w) for w in words})
    return out


def _broader(block: str, *, zh: bool) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    pending = ""
    for line in block.strip().splitlines():
        pending += " " + line
        if ":" not in line:
            continue
        specific, general = pending.split(":", 1)
        pending = ""
        wide = {w if zh else _stem(w) for w in general.split()}
        for word in specific.split():
            out.setdefault(word if zh else _stem(word), set()).update(wide)
    return out


@cache
def _tables(zh: bool, broader: bool, goods_in_general: bool) -> dict[str, frozenset[str]]:
    """{English stem or Chinese word: its alternatives}: the same words; with
    ``broader`` also what covers it; with ``goods_in_general`` also items in general
    for a kind of goods."""
    same, wider, goods = (
        (_SAME_ZH, _BROADER_ZH, _GOODS_ZH) if zh else (_SAME_EN, _BROADER_EN, _GOODS_EN)
    )
    general = [w for w in ktext.GOODS_IN_GENERAL if ktext.has_cjk(w) == zh]
    out: dict[str, set[str]] = {}
    for group in _groups(same, zh=zh):
        for word in group:
            out.setdefault(word, set()).update(group - {word})
    if broader:
        for word, wide in _broader(wider, zh=zh).items():
            out.setdefault(word, set()).update(wide)
    if goods_in_general:
        kinds = {w if zh else _stem(w) for w in general}
        for word in goods.split():
            out.setdefault(word if zh else _stem(word), set()).update(kinds)
    return {w: frozenset(a - {w}) for w, a in out.items()}


def alternatives(
    word: str, *, broader: bool = True, goods_in_general: bool = True
) -> frozenset[str]:
    """The other words that name ``word`` (an English stem as ``ktext.index_tokens``
    makes it, or a Chinese word); with ``broader``, what covers it; with
    ``goods_in_general``, items in general for a kind of goods (for the coverage
    check: would a passage about items answer a question about a jacket? Not for
    relevance or ranking, where every passage on items would match)."""
    table = _tables(ktext.has_cjk(word), broader, broader and goods_in_general)
    return table.get(word, frozenset())


def expand_tokens(tokens: list[str]) -> list[str]:
    """``tokens`` (index tokens) and the same words for them, each once, originals
    first (for ranking: a broader word would favour every passage about items)."""
    out = dict.fromkeys(tokens)
    for token in tokens:
        for alt in sorted(alternatives(token, broader=False)):
            out.setdefault(alt, None)
    return list(out)


# A Chinese quantity word ("两年", "一天", "几张"): a figure the shopper states or asks
# for, not what the question is about; and the modal or motion verbs jieba glues to the
# next word ("能升", "要花", "去取", "钱能").
_ZH_QUANTITY = re.compile(r"^[零一二两三四五六七八九十百几\d]+[年天日月周张个件条次块元小时]+$")
_ZH_GLUED = frozenset("能要会可想去得是")


def _zh_found(word: str, passage: str) -> bool:
    return (
        word in passage
        or ktext.zh_chars_found(word, passage)
        or any(alt in passage for alt in alternatives(word, goods_in_general=False))
    )


def keyword_coverage(keywords: list[str], passage: str, passage_terms: frozenset[str]) -> float:
    """Share of the question's keywords found in a passage: English keywords by stem,
    Chinese ones as substrings (no segmentation mismatch possible), and the shop's other
    words for each. Here, not in knowledge.text: it needs this module's words, and this
    module builds on knowledge.text.

    As in L2's coverage check: goods in general ("things", 东西, 衣服)
    count neither way; a Chinese quantity ("两年", "一天") counts when the passage has
    it in digits ("2年") and is left out otherwise; and a two-character word glued to a
    modal or motion verb ("能升", "要花", "去取") is looked up by its other character.
    "过了两年修拉链要多少钱" found 2 of 5 words in the repairs-after-2-years section,
    "代金券一天最多能领几张" 2 of 5 in the voucher's."""
    stem = ktext.stemmer().stemWord
    found = 0
    counted = 0
    for word in keywords:
        if word.lower() in ktext.GENERIC_NOUNS:
            continue
        if ktext.IS_CJK.match(word):
            if _ZH_QUANTITY.match(word):
                if numerals.zh_digits_as_arabic(word).replace("几", "") in passage:
                    found += 1
                    counted += 1
                continue
            hit = _zh_found(word, passage)
            if not hit and len(word) == 2 and (word[0] in _ZH_GLUED) != (word[1] in _ZH_GLUED):
                core = word[1] if word[0] in _ZH_GLUED else word[0]
                hit = core in passage
            found += hit
        else:
            term = word if word[0].isdigit() else stem(word)
            # The shop's other words for it count too (lexicon: postage for shipping).
            found += term in passage_terms or bool(
                alternatives(term, goods_in_general=False) & passage_terms
            )
        counted += 1
    return found / counted if counted else 0.0
