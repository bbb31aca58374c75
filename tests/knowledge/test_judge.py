"""The answerability judge (knowledge.judge): when it runs, what its verdict does to L2's
plan, and that a failing judge keeps the coverage check's refusal.

The judge's own quality is a measurement, not a unit test (make bench-judge,
bench/results/judge_probe.json: the optional 1.5B model said yes to 0.577 of the
answerable questions the coverage check refused and to none of the unanswerable ones;
the 0.5B said no to all). The model
that judges well (the optional 1.5B) is not installed in CI, so the verdicts below come
from a recording stand-in (tests/fakes.py): what is tested is the plan's response to
"yes", "no" and a model error, with the real retrieval, coverage check and prompt.
"""

from __future__ import annotations

from typing import Any

import pytest

from inference import registry
from knowledge.answer import DONT_KNOW, answer_plan, judged_answer, rule_answer
from knowledge.judge import judge_role
from tests.fakes import FakeBackend
from tests.kb import passage

pytestmark = pytest.mark.django_db

# Answered by the jeans FAQ ("distressed" styles), in words it doesn't use: the coverage
# check refuses it (the passage never says "look").
REFUSED = "do u sell jeans with rips in them? like the distressed look"

LOCAL_LARGE = {
    "BACKEND": "inference.backends.llamacpp.LlamaCppBackend",
    "CONFIG": {"model": "qwen2.5-coder-1.5b-instruct-q4km"},
}


@pytest.fixture
def judge(settings: Any) -> Any:
    settings.TIERDESK_KB_JUDGE = "on"
    settings.TIERDESK_KB_JUDGE_ROLE = "large"
    fake = FakeBackend(role="large")
    registry.register("large", fake)
    yield fake
    registry.unregister("large")


def test_auto_judges_only_with_more_than_the_fallback_model(settings: Any) -> None:
    settings.TIERDESK_KB_JUDGE = "auto"
    settings.TIERDESK_KB_JUDGE_ROLE = "large"
    backends = dict(settings.INFERENCE_BACKENDS)
    settings.INFERENCE_BACKENDS = backends | {"large": {"ALIAS": "fallback"}}
    assert judge_role() is None
    settings.INFERENCE_BACKENDS = backends | {"large": LOCAL_LARGE}
    assert judge_role() == "large"
    settings.TIERDESK_KB_JUDGE = "off"
    assert judge_role() is None
    settings.TIERDESK_KB_JUDGE = "on"
    settings.INFERENCE_BACKENDS = backends | {"large": {"ALIAS": "fallback"}}
    assert judge_role() == "large"


def test_without_the_judge_the_coverage_check_refuses(kb: Any, settings: Any) -> None:
    settings.TIERDESK_KB_JUDGE = "off"
    settings.TIERDESK_KB_POINT = False  # the refusal itself (pointing: below)
    plan = answer_plan(question=REFUSED, language="en")
    assert not plan.answered and plan.text == DONT_KNOW["en"]
    assert plan.retrieval["question_coverage"]["missing"] == ["look"]
    assert "judge" not in plan.retrieval
    # With pointing on (the default), the refused question is one the Jeans FAQ is
    # clearly about: its section is quoted, hedged, never answered.
    settings.TIERDESK_KB_POINT = True
    plan = answer_plan(question=REFUSED, language="en")
    assert not plan.answered and plan.pointed
    assert plan.text.startswith('Our "Jeans FAQ" article says:')
    assert "can't confirm" in plan.text


def test_a_yes_lets_l2_answer_from_the_judged_passage(kb: Any, judge: FakeBackend) -> None:
    judge.replies = ["Yes."]
    plan = answer_plan(question=REFUSED, language="en")
    assert plan.answered
    assert plan.retrieval["judge"]["answers"] is True
    assert plan.citations[0]["title"] == "Jeans FAQ"
    # The judge read the question and the passage it let through, and nothing else.
    (request,) = judge.calls
    assert request.messages is not None and request.max_tokens <= 3
    user = request.messages[-1].content
    assert REFUSED in user and "distressed" in user.lower()
    assert plan.retrieval["judge"]["chunk"] == plan.retrieval["context"][0]
    # The answer still goes through the grounding guard.
    assert plan.grounding is not None and plan.grounding["question"] == REFUSED


@pytest.mark.parametrize("reply", ["No.", "I think it might", Exception("model crashed")])
def test_anything_but_yes_keeps_the_refusal(
    kb: Any, judge: FakeBackend, reply: Any, settings: Any
) -> None:
    settings.TIERDESK_KB_POINT = False  # the refusal the judge keeps, not the pointer after it
    judge.replies = [reply]
    plan = answer_plan(question=REFUSED, language="en")
    assert not plan.answered and plan.text == DONT_KNOW["en"]
    assert plan.actions == ["offer:L3", "offer:human"]
    assert plan.retrieval["judge"]["answers"] is False


def test_a_question_the_coverage_check_passes_is_not_judged(kb: Any, judge: FakeBackend) -> None:
    plan = answer_plan(question="how much is gift wrapping?", language="en")
    assert plan.answered and judge.calls == [] and "judge" not in plan.retrieval


def test_an_order_flows_rule_is_judged_only_when_asked(kb: Any, judge: FakeBackend) -> None:
    judge.replies = ["yes"]
    assert rule_answer(question=REFUSED, language="en") is None
    assert judge.calls == []
    rule = rule_answer(question=REFUSED, language="en", judge=True)
    assert rule is not None and rule.how == "passage" and len(judge.calls) == 1
    assert rule.citations[0]["title"] == "Jeans FAQ" and "distressed" in rule.text.lower()


def test_an_articles_lead_is_never_judged(kb: Any, judge: FakeBackend) -> None:
    # The lead describes the article; the 1.5B said it answers anything about the topic.
    lead = passage(1, "Jacket FAQ", "Questions about our Fleece Jacket.", title="Jacket FAQ")
    explain: dict[str, Any] = {}
    judge.replies = ["yes"]
    assert not judged_answer("is the fleece jacket warm enough for skiing?", [lead], "en", explain)
    assert judge.calls == [] and explain["judge"]["skipped"] == "article lead"
