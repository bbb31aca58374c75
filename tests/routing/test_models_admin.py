from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from routing.classifier_store import classifier_get
from routing.classifier_training import classifier_train
from routing.models import Intent, ReplyTemplate, Rule, SlotPattern
from routing.types import COMPLEX_QUESTION, L3

pytestmark = pytest.mark.usefixtures("seeded")


def test_rule_validation_rejects_a_broken_regex_and_empty_keywords() -> None:
    intent = Intent.objects.get(name=COMPLEX_QUESTION)

    with pytest.raises(ValidationError) as regex_error:
        Rule(name="bad", kind=Rule.KIND_REGEX, pattern="(oops", intent=intent, tier=L3).full_clean()
    with pytest.raises(ValidationError) as keyword_error:
        Rule(name="bad2", kind=Rule.KIND_KEYWORDS, keywords=[], intent=intent).full_clean()

    assert "pattern" in regex_error.value.message_dict
    assert set(keyword_error.value.message_dict) >= {"keywords", "min_density"}


def test_reply_template_placeholders_are_checked() -> None:
    intent = Intent.objects.get(name="order_status")

    with pytest.raises(ValidationError):
        ReplyTemplate(
            intent=intent, key="default", language="en", text="Order {order_id"
        ).full_clean()
    ReplyTemplate(
        intent=intent, key="default", language="en", text="Order {order_id} is {status}."
    ).full_clean()


def test_slot_pattern_regex_is_checked() -> None:
    with pytest.raises(ValidationError):
        SlotPattern(name="zip", regex="[0-9").full_clean()


def test_classifier_is_cached_until_the_data_changes() -> None:
    first = classifier_get()
    assert first is not None
    assert first is classifier_get()
    assert first.sample_count > 1000
    assert first.train_seconds > 0

    # A rule edit bumps the version but leaves the training data alone: no retrain.
    rule = Rule.objects.get(name="comparison")
    rule.priority = 21
    rule.save()
    assert classifier_get() is first

    Intent.objects.get(name="greeting").utterances.create(language="en", text="good day to you")
    assert classifier_get() is not first


def test_classifier_needs_two_intents() -> None:
    with pytest.raises(ValueError, match="two intents"):
        classifier_train(samples=[("hi", "greeting"), ("hello", "greeting")])


def test_admin_pages_render(admin_client: Client) -> None:
    intent = Intent.objects.get(name="order_status")

    changelist = admin_client.get(reverse("admin:routing_intent_changelist"))
    change = admin_client.get(reverse("admin:routing_intent_change", args=[intent.pk]))
    rules = admin_client.get(reverse("admin:routing_rule_changelist"))
    slots = admin_client.get(reverse("admin:routing_slotpattern_changelist"))

    assert changelist.status_code == change.status_code == rules.status_code == 200
    assert slots.status_code == 200
    assert "where is my order" in change.content.decode()  # the utterance inline
    assert "comparison" in rules.content.decode()


def test_admin_adds_an_utterance_through_the_inline(admin_client: Client) -> None:
    intent = Intent.objects.get(name="greeting")
    url = reverse("admin:routing_intent_change", args=[intent.pk])
    existing = list(intent.utterances.all())
    data = {
        "name": intent.name,
        "tier": intent.tier,
        "description": intent.description,
        "enabled": "on",
        "utterances-TOTAL_FORMS": str(len(existing) + 1),
        "utterances-INITIAL_FORMS": str(len(existing)),
        "utterances-MIN_NUM_FORMS": "0",
        "utterances-MAX_NUM_FORMS": "1000",
        "templates-TOTAL_FORMS": "0",
        "templates-INITIAL_FORMS": "0",
        "templates-MIN_NUM_FORMS": "0",
        "templates-MAX_NUM_FORMS": "1000",
    }
    for i, utterance in enumerate(existing):
        data[f"utterances-{i}-id"] = str(utterance.pk)
        data[f"utterances-{i}-intent"] = str(intent.pk)
        data[f"utterances-{i}-language"] = utterance.language
        data[f"utterances-{i}-text"] = utterance.text
    new = len(existing)
    data[f"utterances-{new}-intent"] = str(intent.pk)
    data[f"utterances-{new}-language"] = "zh"
    data[f"utterances-{new}-text"] = "哈罗哈罗"

    response = admin_client.post(url, data)

    assert response.status_code == 302, response.content.decode()[:2000]
    assert intent.utterances.filter(language="zh", text="哈罗哈罗").exists()
