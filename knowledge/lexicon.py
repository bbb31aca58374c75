"""Words for retrieval, the question-coverage check and the entailment check.

The shop's own words (a shopper's "postage" for the articles' shipping, "Lyon" under
"France") are the shop's data: synonym sets in Django admin, read by
``knowledge.shop_words``; ``alternatives``, ``expand_tokens`` and ``is_goods`` answer
from them. Retrieval (BM25 terms and the keyword share that marks a passage relevant),
the question-coverage check and the extract's choice of sentences look words up here.

What stays in code holds for any shop in the language: the Chinese quantity words and
the modal verbs jieba glues to the next word (``keyword_coverage``), and the entailment
check's own relation, ``CLAIM_SAME`` (``claim_stem``): the few words English and Chinese
answers use interchangeably ("buy" backs "purchase", "cost" backs "price"). The
entailment check (``entail.claim_check``) reads no synonym set: a generated sentence
must still say what the passage says in the passage's own terms, so a shop's synonym
can make a question count as answered, never a claim count as backed.

Goods in general (items, products, clothes, 商品...) are ``text.GOODS_IN_GENERAL``.
"""

from __future__ import annotations

import re

from . import numerals, shop_words
from . import text as ktext

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
    return shop_words.current().is_goods(word)


def alternatives(
    word: str, *, broader: bool = True, goods_in_general: bool = True
) -> frozenset[str]:
    """The other words that name ``word`` (an English stem as ``ktext.index_tokens``
    makes it, or a Chinese word); with ``broader``, what covers it; with
    ``goods_in_general``, items in general for a kind of goods (for the coverage
    check: would a passage about items answer a question about a jacket? Not for
    relevance or ranking, where every passage on items would match)."""
    return shop_words.current().alternatives(
        word, broader=broader, goods_in_general=goods_in_general
    )


def alternatives_in(word: str, *, zh: bool) -> frozenset[str]:
    """The shop's equivalent terms for ``word`` in the Chinese (``zh``) or English sets."""
    return shop_words.current().alternatives_in(word, zh=zh)


def expand_tokens(tokens: list[str]) -> list[str]:
    """``tokens`` (index tokens) and the same words for them, each once, originals
    first (for ranking: a broader word would favour every passage about items)."""
    words = shop_words.current()
    out = dict.fromkeys(tokens)
    for token in tokens:
        for alt in sorted(words.alternatives(token, broader=False)):
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
            # The shop's other words for it count too (the synonym sets: postage for shipping).
            found += term in passage_terms or bool(
                alternatives(term, goods_in_general=False) & passage_terms
            )
        counted += 1
    return found / counted if counted else 0.0
