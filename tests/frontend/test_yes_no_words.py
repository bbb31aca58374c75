"""Issue #36 item 7: the widget's yes/no buttons carry the words the bot's questions ask
for ("Shall I? (yes / no)", "需要吗？（是 / 否）", 回复“是”…), in English and Chinese,
and the dialogue takes each button's word as the answer it names."""

from __future__ import annotations

import json
import re

from django.conf import settings

from chatbot.answerers.yes_no import is_no, is_yes

STRINGS = settings.BASE_DIR / "frontend" / "static" / "tierdesk" / "widget" / "strings.js"
TEMPLATES = settings.BASE_DIR / "routing" / "seed_data" / "templates.json"
# The words a reply asks the shopper to answer with.
ASKED = {
    "en": [re.compile(r"\((\w+) / (\w+)\)"), re.compile(r'[Rr]eply "(\w+)"|or "(\w+)"')],
    "zh": [re.compile(r"（(\w+) / (\w+)）"), re.compile(r"回复“(\w+)”")],
}


def buttons() -> dict[str, tuple[str, str]]:
    """The widget's yes and no labels per language, read from strings.js."""
    source = STRINGS.read_text(encoding="utf-8")
    labels = {}
    for lang in ("en", "zh"):
        block = source[source.index(f"\n  {lang}: {{") :]
        yes = re.search(r'\n    yes: ("[^"]*")', block)
        no = re.search(r'\n    no: ("[^"]*")', block)
        assert yes and no, f"no yes/no labels in STRINGS.{lang}"
        labels[lang] = (json.loads(yes.group(1)), json.loads(no.group(1)))
    return labels


def templates() -> list[tuple[str, str, str]]:
    """(where, language, text) of every seeded reply template."""
    data = json.loads(TEMPLATES.read_text(encoding="utf-8"))
    found: list[tuple[str, str, str]] = []

    def walk(node: object, where: str) -> None:
        if isinstance(node, dict):
            if set(node) >= {"en", "zh"} and all(isinstance(node[k], str) for k in ("en", "zh")):
                found.extend((where, lang, node[lang]) for lang in ("en", "zh"))
                return
            for key, value in node.items():
                walk(value, f"{where}.{key}")

    walk(data, "templates")
    return found


def test_every_word_a_question_asks_for_is_on_a_button() -> None:
    labels = buttons()
    asked_somewhere: dict[str, set[str]] = {"en": set(), "zh": set()}
    for where, lang, text in templates():
        quoted = {w for p in ASKED[lang] for m in p.finditer(text) for w in m.groups() if w}
        # Only the yes/no answers ("reply \"all\"" picks items, it answers no question).
        words = {w for w in quoted if is_yes(w) or is_no(w)}
        allowed = {label.lower() for label in labels[lang]}
        stray = {w for w in words if w.lower() not in allowed}
        assert not stray, f"{where} ({lang}) asks for {stray}; the buttons read {labels[lang]}"
        asked_somewhere[lang] |= {w.lower() for w in words}
    # The check saw the questions: both words of each language are asked for somewhere.
    for lang, (yes, no) in labels.items():
        assert {yes.lower(), no.lower()} <= asked_somewhere[lang], lang


def test_each_button_answers_what_it_says() -> None:
    for yes, no in buttons().values():
        assert is_yes(yes) and not is_no(yes)
        assert is_no(no) and not is_yes(no)


# A reply that offers a person: "Would you like me to pass you to a person…?", "reply
# "yes" and I'll pass this to a person", "需要为您转接人工客服吗？".
PERSON_OFFER = {
    "en": re.compile(
        r"(?:Would you like|Shall I|reply \"yes\" and I'll|I can connect you)[^.]*\bperson\b"
    ),
    "zh": re.compile(r"转接人工客服(?:吗)?？|转接人工客服。需要吗|回复“是”，我为您转接人工客服"),
}
# The large tier's own replies, whose offer its answerer adds (chatbot/answerers/l3.py,
# chatbot/turn.py): not said through a flow's template.
LARGE_TIER = {"dialogue.model_down", "dialogue.l3_abstain", "dialogue.l3_records"}


def test_every_flow_reply_offering_a_person_carries_the_offer() -> None:
    """The template itself carries its offer (``offers.TEMPLATE_OFFERS``), so whichever
    flow says it, the widget shows Yes/No and the dialogue reads the answer."""
    from chatbot.answerers.offers import OFFER_HUMAN, TEMPLATE_OFFERS

    offering = {
        where.removeprefix("templates.")
        for where, lang, text in templates()
        if PERSON_OFFER[lang].search(text)
    }
    assert {"return_item.outside_window", "handoff.offer"} <= offering  # the check sees them
    for where in sorted(offering - LARGE_TIER):
        intent, key = where.split(".")
        assert TEMPLATE_OFFERS.get((intent, key)) == OFFER_HUMAN, where
    # And every template the table names exists.
    seeded = {where.removeprefix("templates.") for where, _, _ in templates()}
    assert {f"{intent}.{key}" for intent, key in TEMPLATE_OFFERS} <= seeded


def test_declining_an_offer_in_other_words_is_a_no() -> None:
    for text in (
        "no",
        "No thanks!",
        "no, thank you",
        "nope, thanks",
        "not now",
        "I'm good, thanks",
        "不用",
        "不用了",
        "不用了，谢谢",
        "不需要",
        "没事，谢谢",
        "暂时不用",
    ):
        assert is_no(text) and not is_yes(text), text
    for text in ("thanks", "谢谢", "ok thanks", "yes please", "好的，谢谢"):
        assert not is_no(text), text
