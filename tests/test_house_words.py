"""House rule: the shop's words are the shop's data (issue #33).

knowledge/ and routing/ hold no shop-specific word list in code: what shoppers call the
things a shop sells, its places, its services, are synonym sets in Django admin
(``knowledge.shop_words``), seeded for the demo shop from
knowledge/seed_data/<language>/synonyms.txt. Product code keeps only lists that hold
for any shop in the language: question words, negation, numbers and units, courtesy,
how people ask for a person.

Checked from the files alone: every module-level constant of knowledge/ or routing/
that holds six or more words (a string, a collection of strings, a ``re.compile`` of
four or more plain-word alternatives) must be named below with what makes it a
language rule. ``SHOP_SPECIFIC_STILL_IN_CODE`` names the ones that are not, still to
move to data; nothing may join it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROOTS = ("knowledge", "routing")

# routing/handoff_vetoes.py: phrasings that mention a person without asking for one.
_VETOES = [
    "_NEGATION_RE",
    "_NO_PERSON_NEEDED_RE",
    "_ZH_NEGATION_RE",
    "_IDENTITY_RE",
    "_INFO_RE",
    "_SHOPPER_IS_HUMAN_RE",
    "_WHETHER_NEEDED_RE",
    "_REPORT_OR_OPINION_RE",
    "_PAST_CONTACT_RE",
    "_PROCESS_RE",
    "_CONDITION_RE",
    "_WILL_QUESTION_RE",
    "_ROLE_RE",
    "_CONTACT_ME_RE",
    "_ABOUT_STAFF_RE",
    "_DELIVERY_RE",
    "_PUT_THROUGH_RE",
    "_ELLIPSIS_RE",
    "_MIXED_DECLINE_RE",
    "_OWN_BOSS_RE",
    "_LATER_RE",
    "_HOW_RE",
    "_NOW_RE",
    "_DESCRIBES_RE",
    "_AGAIN_RE",
]
LANGUAGE_LISTS = {
    # question words
    "knowledge/question_type.py:WH_EN": "English question words",
    "knowledge/question_type.py:WH_ZH": "Chinese question words",
    "knowledge/question_type.py:AUXILIARIES_EN": "English auxiliary verbs that open a question",
    "knowledge/question_type.py:TAGS_EN": "English question tags",
    "knowledge/coverage.py:QUESTION_FILLER": "English words that frame a question",
    # how anyone asks a question, per language (knowledge/question_forms.py)
    "knowledge/question_forms.py:VALUE_FORMS": "asking for a price, a duration or a percentage",
    "knowledge/question_forms.py:PLACE_FORMS": "asking whether and how things are sent somewhere",
    "knowledge/question_forms.py:CASE_FORMS": "asking whether a rule covers a case",
    "knowledge/question_forms.py:_ASKS_EN": "English words that open a question",
    "knowledge/question_forms.py:_ASKS_ZH": "Chinese question words",
    "knowledge/question_forms.py:_EN_MODAL": "English modal verbs of a rule",
    "knowledge/question_forms.py:_EN_WE": "how an English rule names the shop",
    "knowledge/question_forms.py:_EN_YOU": "how an English rule names the shopper",
    "knowledge/question_forms.py:_HEADING_KIND": "heading words that name a price or a duration",
    "knowledge/question_forms.py:_HEADING_TAIL_EN": "English heading words for a kind of value",
    "knowledge/question_forms.py:_HEADING_TAIL_ZH": "Chinese heading words for a kind of value",
    "knowledge/question_forms.py:_SENDING": "English/Chinese verbs of sending goods",
    "knowledge/question_forms.py:_ZH_CONDITION": "how a Chinese condition clause opens or ends",
    "knowledge/question_forms.py:_ZH_MODAL": "Chinese modal verbs of a rule",
    "knowledge/question_forms.py:_ZH_NOT": "Chinese negation and scope adverbs",
    "knowledge/question_forms.py:_ZH_WE": "how a Chinese rule names the shop",
    "routing/knowledge_route.py:_RULE": "English/Chinese phrasing of a question about a rule",
    "routing/knowledge_route.py:_STATUS": "English/Chinese phrasing of a status question",
    "routing/knowledge_route.py:_PERSONAL": "words that make a question about one's own order",
    # negation, limits, qualifiers
    "knowledge/terms.py:NEG_EN": "English negation",
    "knowledge/terms.py:NEG_ZH": "Chinese negation",
    "knowledge/terms.py:ZH_NOT_NEG": "Chinese words that contain 不/无 without negating",
    "knowledge/grounding.py:_LIMIT": "words that state a limit",
    "knowledge/text.py:_QUAL_EN": "English qualifiers (only, except)",
    "knowledge/text.py:_QUAL_ZH": "Chinese qualifiers (仅, 除了)",
    "knowledge/entail.py:_UNIVERSAL": "English/Chinese universal quantifiers",
    "knowledge/entail.py:_IDIOMS": "English idioms for 'free of charge'",
    # numbers and units
    "knowledge/numerals.py:WORD_NUMBERS": "English number words",
    "knowledge/numerals.py:ZH_DIGITS": "Chinese digits",
    "knowledge/numerals.py:_NUM": "numbers with their units",
    "knowledge/coverage.py:_DURATION_WORDS": "English units of time",
    "knowledge/entail.py:_PERIOD": "English 'per day/week' periods",
    "knowledge/entail.py:_PERIOD_ZH": "Chinese units of time",
    # the language's function words, courtesy, answers' own phrasing
    "knowledge/text.py:EN_STOPWORDS": "English stop words",
    "knowledge/text.py:SHOP_WORDS_ZH": "Chinese shopping words jieba splits (包邮)",
    "knowledge/text.py:GENERIC_NOUNS": "nouns for goods in general (stuff, things, 东西)",
    "knowledge/text.py:REFUSAL": "how an answer says it doesn't know",
    # cards a shopper would ask (knowledge/card_questions.py)
    "knowledge/card_questions.py:_SPECULATIVE": "opinion questions (benefits of, 好处)",
    "knowledge/card_questions.py:_ASKING": "words that ask for a value (how much, 多少)",
    # the case a question names (knowledge/named_case.py)
    "knowledge/named_case.py:_PLACE_PREPOSITIONS": "English prepositions before a place",
    "knowledge/named_case.py:_ZH_SEND_PREFIX": "verbs jieba glues to a place (寄到)",
    "knowledge/named_case.py:_AT_LEAST_BEFORE": "a lower bound (over, 满)",
    "knowledge/named_case.py:_AT_LEAST_AFTER": "a lower bound after it (or more, 以上)",
    "knowledge/named_case.py:_BELOW_BEFORE": "an upper bound (under, 低于)",
    # the case a rule is stated for (knowledge/rule_case.py)
    "knowledge/rule_case.py:_ABROAD": "English/Chinese words for orders to another country",
    "knowledge/rule_case.py:_DOMESTIC": "English/Chinese words for orders within the country",
    # values a statement holds (knowledge/values.py)
    "knowledge/values.py:_MONEY": "currency signs and words around an amount",
    "knowledge/values.py:_CURRENCY": "currency signs and words to ISO codes",
    "knowledge/values.py:_CLAUSE": "English/Chinese clause separators",
    "knowledge/values.py:_GENERIC_EN": "English words every price or duration statement has",
    "knowledge/values.py:_GENERIC_ZH": "Chinese words every price or duration statement has",
    "knowledge/grounding.py:COURTESY": "courtesy words",
    "knowledge/terms.py:COURTESY_TERMS": "courtesy words",
    "knowledge/entail.py:_PARTICLE": "English/Chinese discourse particles (yes, sure)",
    "knowledge/entail.py:_PRONOUN_OPENING": "English pronouns",
    "knowledge/grounding.py:_PRONOUN_OPENING": "English pronouns",
    "knowledge/lexicon.py:CLAIM_SAME": "words any answer uses interchangeably (buy/purchase)",
    # how shoppers ask for (or about) a person, in English and Chinese
    "routing/handoff_cue.py:_FUZZY_CUE_WORDS": "words for a person",
    "routing/handoff_cue.py:_FUZZY_NOT": "near-misses of words for a person",
    "routing/handoff_cue.py:_CUE_RE": "words for a person",
    "routing/handoff_cue.py:_CUE_EXTRA_RE": "words for a person",
    "routing/handoff_cue.py:_NOT_A_PERSON_RE": "words that contain 人 without meaning a person",
    **{f"routing/handoff_vetoes.py:{name}": "mentions of a person, not asks" for name in _VETOES},
    "routing/roleplay.py:_SPACED": "prompt-injection phrasings",
    # not words shoppers use: field names and labels
    "knowledge/answer.py:LABELS": "the prompt's section labels",
    "knowledge/seed.py:ARTICLES": "the demo seed's article index (titles and files)",
    "knowledge/seed.py:STORE_POLICY": "the demo seed's store-policy article",
    "routing/interchange_parse.py:_CSV_ALIASES": "CSV column names",
    "routing/seed.py:RULE_FIELDS": "field names",
}
SHOP_SPECIFIC_STILL_IN_CODE = {
    "knowledge/entail.py:_SUBJECT_NAMES": "the demo shop's membership levels",
    "knowledge/text.py:GOODS_IN_GENERAL": "names clothes (衣服) among goods in general",
}

_WORDS = re.compile(r"[A-Za-z\u4e00-\u9fff]+")
_PLAIN = re.compile(r"^[A-Za-z\u4e00-\u9fff'\- :,\n|]+$")
_ALTERNATIVE = re.compile(r"[\sA-Za-z\u4e00-\u9fff']+")
_REGEX_SYNTAX = re.compile(r"\\[bswdWSB]|\(\?[:!=<]+|[()?*+\[\]{}^$.\\]")


def _strings(node: ast.AST) -> list[str]:
    return [
        n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]


def _is_compile(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "compile"


def _word_count(value: ast.AST) -> int:
    """Plain words in a constant's strings, or plain-word alternatives of its regexes."""
    compiles = [n for n in ast.walk(value) if _is_compile(n)]
    if compiles:
        source = "".join(s for c in compiles for s in _strings(c))
        alternatives = _REGEX_SYNTAX.sub(" ", source).split("|")
        plain = [a for a in alternatives if a.strip() and _ALTERNATIVE.fullmatch(a)]
        return len(plain) if len(plain) >= 4 else 0
    return sum(len(_WORDS.findall(s)) for s in _strings(value) if _PLAIN.match(s.strip() or "-"))


def word_lists() -> set[str]:
    found = set()
    for root in ROOTS:
        for path in sorted((ROOT / root).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
                    continue
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    named = isinstance(target, ast.Name) and target.id != "__all__"
                    if named and _word_count(node.value) >= 6:
                        assert isinstance(target, ast.Name)
                        found.add(f"{path.relative_to(ROOT)}:{target.id}")
    return found


def test_no_shop_specific_word_list_in_code() -> None:
    unknown = sorted(word_lists() - LANGUAGE_LISTS.keys() - SHOP_SPECIFIC_STILL_IN_CODE.keys())
    assert not unknown, (
        "word lists in knowledge/ or routing/ that the house rule doesn't know: a shop's "
        "words belong in its synonym sets (knowledge/seed_data/<language>/synonyms.txt for "
        "the demo shop, Django admin for a shop); a rule for any shop in the language goes "
        "in LANGUAGE_LISTS with why:\n" + "\n".join(unknown)
    )


def test_the_named_lists_exist() -> None:
    # A list that moved to data or was renamed leaves the allowlist too.
    gone = sorted((LANGUAGE_LISTS.keys() | SHOP_SPECIFIC_STILL_IN_CODE.keys()) - word_lists())
    assert not gone, "named here but no longer a word list in code:\n" + "\n".join(gone)


def test_the_scan_finds_a_word_list(tmp_path: Path) -> None:
    module = ast.parse(
        '_COLOURS = "navy teal ochre olive mustard coral"\nX = re.compile(r"\\b(a|bb|cc|dd)\\b")'
    )
    assign = [n for n in module.body if isinstance(n, ast.Assign)]
    assert _word_count(assign[0].value) == 6
    assert _word_count(assign[1].value) == 4
