"""The answerability classifier (knowledge.answerability): its stored model, its
decisions on a made-up bicycle shop's article (real retrieval, embedders and index),
the refit from a shop's labelled questions, and L2's use of the decision."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from knowledge import answerability
from knowledge.answer import DONT_KNOW, answer_plan
from knowledge.answerability_features import FEATURES
from tests.knowledge.test_pointing import BIKES_EN, BIKES_ZH
from tests.knowledge.test_pointing import _ingest as _ingest_only

CLEAR = [
    ("how much does it cost to have the bike assembled at my door?", "Assembly at home"),
    ("which countries do you deliver bicycles to?", "Where we deliver"),
    ("how long is the warranty on the frame?", "Frame warranty"),
]
UNRELATED = ["what is the best pizza topping in Naples?", "can I pay my phone bill here?"]


@pytest.fixture(autouse=True)
def _seed_model(settings: Any, tmp_path: Path) -> None:
    """The seed model, not a refit some earlier run left in var/."""
    settings.TIERDESK_KB_ANSWERABILITY = True
    settings.TIERDESK_KB_ANSWERABILITY_PATH = str(tmp_path / "shop-answerability.json")
    answerability.model_reset()


def _ingest(title: str, text: str, language: str) -> int:
    """Ingested with its sections' generated questions and answer cards drafted
    (extractive), as the worker does."""
    from knowledge.cards import cards_sync
    from knowledge.section_questions import section_questions_sync

    doc = _ingest_only(title, text, language)
    section_questions_sync(document_id=doc)
    cards_sync(document_id=doc)
    return doc


def _seed_payload() -> dict[str, Any]:
    payload: dict[str, Any] = json.loads(answerability.SEED_PATH.read_text())
    return payload


def test_the_seed_model_loads_and_is_checked() -> None:
    model = answerability.model_load()
    assert model.features == FEATURES
    assert answerability.model_path() == answerability.SEED_PATH
    tampered = _seed_payload()
    tampered["coef"][0][0] += 1.0
    with pytest.raises(answerability.ModelError, match="checksum"):
        answerability.model_from(tampered)
    other = _seed_payload()
    other["features"] = other["features"][:-1]
    other["checksum"] = answerability.checksum_of(other)
    with pytest.raises(answerability.ModelError, match="other features"):
        answerability.model_from(other)


@pytest.mark.django_db
def test_the_classifier_separates_clear_cases() -> None:
    doc = _ingest("Bicycle delivery", BIKES_EN, "en")
    for question, heading in CLEAR:
        decision = answerability.decide_for(question, "en")
        assert decision.label == "answers", (question, decision.record())
        assert decision.candidate is not None
        assert decision.candidate.key[0] == doc
        assert heading in decision.candidate.best.heading
    for question in UNRELATED:
        decision = answerability.decide_for(question, "en")
        assert decision.label == "unrelated", (question, decision.record())


@pytest.mark.django_db
def test_the_classifier_reads_chinese() -> None:
    _ingest("自行车配送", BIKES_ZH, "zh")
    decision = answerability.decide_for("上门组装要多少钱？", "zh")
    assert decision.label == "answers" and decision.candidate is not None
    assert "上门组装" in decision.candidate.best.heading
    assert answerability.decide_for("你们卖披萨吗？", "zh").label == "unrelated"


def _labelled(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n")
    return path


@pytest.mark.django_db
def test_a_refit_on_the_shops_labelled_questions_changes_decisions(
    settings: Any, tmp_path: Path
) -> None:
    _ingest("Bicycle delivery", BIKES_EN, "en")
    before = {q: answerability.decide_for(q, "en").label for q, _ in CLEAR}
    assert set(before.values()) == {"answers"}
    # A shop whose labels say these questions are not answered by the article (and
    # pizza questions are): the refit must follow its labels, not the seed's.
    rows: list[dict[str, Any]] = [
        {"question": q, "lang": "en", "kind": "unanswerable"} for q, _ in CLEAR * 2
    ]
    for question in UNRELATED:
        for heading in ("Where we deliver", "Assembly at home", "Frame warranty"):
            rows.append(
                {
                    "question": question,
                    "lang": "en",
                    "kind": "fact",
                    "doc": "Bicycle delivery",
                    "section": heading,
                }
            )
    call_command("fit_answerability", questions=str(_labelled(tmp_path / "own.jsonl", rows)))
    assert Path(settings.TIERDESK_KB_ANSWERABILITY_PATH).is_file()
    assert answerability.model_path() == Path(settings.TIERDESK_KB_ANSWERABILITY_PATH)
    after = {q: answerability.decide_for(q, "en").label for q, _ in CLEAR}
    assert after != before
    assert answerability.model_load().meta["source"] == "own.jsonl"


@pytest.mark.django_db
def test_a_bad_labelled_file_gets_a_clear_error(tmp_path: Path) -> None:
    _ingest("Bicycle delivery", BIKES_EN, "en")
    cases = [
        ('{"question": "x", "lang": "en", "kind": "unanswerable"}\nnot json\n', "line 2: not JSON"),
        ('{"question": "x", "lang": "fr", "kind": "fact"}\n', "line 1: lang must be"),
        ('{"question": "x", "lang": "en", "kind": "fact"}\n', "needs doc and section"),
        (
            '{"question": "x", "lang": "en", "kind": "fact", "doc": "Bicycle delivery",'
            ' "section": "Gift wrapping"}\n',
            "not in the knowledge base: Bicycle delivery / Gift wrapping",
        ),
        ('{"question": "x", "lang": "en", "kind": "unanswerable"}\n', "no pairs labelled answers"),
        ("", "no labelled questions"),
    ]
    for number, (text, message) in enumerate(cases):
        path = tmp_path / f"bad{number}.jsonl"
        path.write_text(text)
        with pytest.raises(CommandError, match=message):
            call_command("fit_answerability", questions=str(path))
    with pytest.raises(CommandError, match="No such file"):
        call_command("fit_answerability", questions=str(tmp_path / "missing.jsonl"))


# -- L2 ----------------------------------------------------------------------------------------
@pytest.mark.django_db
def test_l2_abstains_when_the_classifier_says_unrelated() -> None:
    _ingest("Bicycle delivery", BIKES_EN, "en")
    answer = answer_plan(question=UNRELATED[0], language="en")
    assert answer.text == DONT_KNOW["en"] and answer.pointed is None
    assert answer.retrieval["answerability"]["label"] == "unrelated"


@pytest.mark.django_db
def test_l2_answers_from_the_section_the_classifier_chose() -> None:
    doc = _ingest("Bicycle delivery", BIKES_EN, "en")
    answer = answer_plan(question=CLEAR[0][0], language="en")
    assert answer.answered and answer.grounding is not None
    assert answer.retrieval["answerability"]["label"] == "answers"
    assert answer.citations[0]["document_id"] == doc
    assert answer.citations[0]["heading"] == "Assembly at home"


@pytest.mark.django_db
def test_l2_uses_the_thresholds_when_the_model_is_unusable(settings: Any, tmp_path: Path) -> None:
    _ingest("Bicycle delivery", BIKES_EN, "en")
    broken = tmp_path / "shop-answerability.json"
    broken.write_text("{")
    answer = answer_plan(question=UNRELATED[0], language="en")
    assert "answerability" not in answer.retrieval
    assert answer.text == DONT_KNOW["en"]
