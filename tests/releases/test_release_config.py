"""What a release changes in a turn: template version, router threshold, model role
and fast-model sampling, each on the candidate's sessions only."""

from __future__ import annotations

from typing import Any

import pytest

from chatbot.answerers.base import AnswerPlan
from chatbot.models import Message
from chatbot.services import release_apply
from inference.base import GenerationRequest
from releases.config import config_parse
from releases.models import Release
from routing.models import Intent, ReplyTemplate
from routing.router import route_message
from tests.shopper import Shopper


@pytest.mark.django_db(transaction=True)
async def test_candidate_sessions_get_the_versioned_templates(
    seeded_shop: None, fake_models: Any
) -> None:
    greeting = await Intent.objects.aget(name="greeting")
    await ReplyTemplate.objects.acreate(
        intent=greeting, key="hello-v2", language="en", text="Hi from templates v2!"
    )
    # Before any candidate: the plain template, on the stable release.
    before = await Shopper.connect()
    text, done = await before.ask("hello")
    assert text != "Hi from templates v2!"
    assert (await Message.objects.aget(pk=done["message_id"])).variant == "stable"
    await before.close()
    # A candidate on every session: its template version answers.
    release = await Release.objects.acreate(
        name="v2", status=Release.Status.RUNNING, weight=100, config={"prompt_version": "v2"}
    )
    after = await Shopper.connect()
    text, done = await after.ask("hello")
    assert text == "Hi from templates v2!"
    reply = await Message.objects.aget(pk=done["message_id"])
    assert (reply.variant, reply.release_id) == ("candidate", release.pk)
    # No v2 template in Chinese: the Chinese shopper gets the Chinese default, not v2.
    text_zh, _ = await after.ask("你好")
    assert text_zh != "Hi from templates v2!"
    await after.close()


@pytest.mark.django_db
def test_a_release_threshold_changes_the_routers_decision(seeded_shop: None) -> None:
    text = "i have an issue logging in to my account"
    default = route_message(text=text, language="en")
    assert default.reason["kind"] == "classifier" and default.confidence < 1.0
    # A release that wants certainty (threshold 1.0) asks instead of answering.
    strict = route_message(text=text, language="en", clarify_threshold=1.0)
    assert strict.tier == "clarify" and strict.reason["threshold"] == 1.0
    assert route_message(text=text, language="en", clarify_threshold=0.0).tier == default.tier


def test_roles_and_fast_sampling_apply_to_the_plan() -> None:
    config = config_parse(
        {"roles": {"L1": "fast_v2"}, "fast": {"temperature": 0.7, "max_tokens": 12}},
        check_roles=False,
    )
    l1 = AnswerPlan(
        tier="L1",
        intent="order_status",
        text="t",
        language="en",
        generation=GenerationRequest(prompt="p", max_tokens=64, temperature=0.2),
        role="fast",
    )
    release_apply(l1, config)
    assert l1.role == "fast_v2" and l1.generation is not None
    assert (l1.generation.temperature, l1.generation.max_tokens) == (0.7, 12)
    # An L3 plan keeps its role and sampling; a template reply has nothing to change.
    l3 = AnswerPlan(
        tier="L3",
        intent="complex_question",
        text="t",
        language="en",
        generation=GenerationRequest(prompt="p", max_tokens=300, temperature=0.3),
        role="large",
    )
    release_apply(l3, config)
    assert l3.role == "large" and l3.generation is not None and l3.generation.temperature == 0.3
    template = AnswerPlan(tier="L1", intent="greeting", text="hi", language="en")
    release_apply(template, config)
    assert template.role == "fast" and template.generation is None
