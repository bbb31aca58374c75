"""Bring your own intents: CSV, JSON and Rasa nlu.yml import/export."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from routing.classifier_store import classifier_get
from routing.interchange import intents_import
from routing.interchange_export import intents_export
from routing.interchange_parse import bundle_parse
from routing.interchange_records import ImportFailed
from routing.models import Intent, ReplyTemplate, Utterance
from routing.versioning import router_version_get

pytestmark = pytest.mark.django_db

GIFT_CSV = """intent,tier,language,kind,key,text
gift_card,L2,en,utterance,,do gift cards expire
gift_card,L2,en,utterance,,how long is a gift card valid
gift_card,L2,zh,utterance,,礼品卡有效期多久
gift_card,L2,en,template,default,Gift cards never expire.
store_hours,L1,,utterance,,when do you open
store_hours,L1,,utterance,,what are your opening hours
store_hours,L1,,utterance,,你们几点开门
"""


def snapshot() -> dict[str, object]:
    return {
        "intents": sorted(Intent.objects.values_list("name", "tier", "enabled")),
        "utterances": sorted(Utterance.objects.values_list("intent__name", "language", "text")),
        "templates": sorted(
            ReplyTemplate.objects.values_list("intent__name", "key", "language", "text")
        ),
    }


def test_csv_import_creates_intents_examples_and_templates_and_bumps_once() -> None:
    before = router_version_get().version

    plan = intents_import(GIFT_CSV, fmt="csv")

    assert plan.totals["intents_created"] == 2
    assert plan.totals["utterances_added"] == 6
    assert plan.totals["templates_added"] == 1
    assert dict(Intent.objects.values_list("name", "tier")) == {
        "gift_card": "L2",
        "store_hours": "L1",
    }
    # Language column empty: detected per text.
    assert Utterance.objects.get(text="你们几点开门").language == "zh"
    assert Utterance.objects.get(text="when do you open").language == "en"
    assert ReplyTemplate.objects.get(intent__name="gift_card").text == "Gift cards never expire."
    assert router_version_get().version == before + 1
    # The imported intents are what the classifier now decides between.
    classifier = classifier_get()
    assert classifier is not None
    assert set(classifier.intents) == {"gift_card", "store_hours"}
    assert classifier.predict(text="do gift cards ever expire")[0][0] == "gift_card"


def test_banking77_style_csv_loads_with_a_default_tier() -> None:
    content = (
        "text,category\nI am still waiting on my card?,card_arrival\n"
        "My top-up failed,top_up_failed\n"
    )

    with pytest.raises(ImportFailed) as no_tier:
        intents_import(content, fmt="csv")
    plan = intents_import(content, fmt="csv", default_tier="L3", default_language="en")

    assert "needs a tier" in str(no_tier.value)
    assert plan.totals == {**plan.totals, "intents_created": 2, "utterances_added": 2}
    assert Intent.objects.get(name="card_arrival").tier == "L3"


def test_malformed_csv_reports_every_bad_line_and_applies_nothing() -> None:
    intents_import(GIFT_CSV, fmt="csv")
    before = snapshot()
    version = router_version_get().version
    bad = (
        "intent,tier,language,kind,key,text\n"
        "gift_card,L2,en,utterance,,can I reload a gift card\n"  # valid: must not be applied
        "bad name!,L2,en,utterance,,hello\n"  # line 3
        "returns,L9,en,utterance,,I want to return this\n"  # line 4
        "returns,L1,fr,utterance,,je veux retourner\n"  # line 5
        "gift_card,L2,en,template,default,Balance: {balance\n"  # line 6
        "gift_card,L2,en,utterance,,\n"  # line 7
        "gift_card,L2,en,utterance\n"  # line 8
        "gift_card,L3,en,utterance,,tier changes mid-file\n"  # line 9
    )

    with pytest.raises(ImportFailed) as failed:
        intents_import(bad, fmt="csv")

    where = {e.where: e.message for e in failed.value.errors}
    assert set(where) == {f"line {n}" for n in (3, 4, 5, 6, 7, 8, 9)}
    assert "intent name" in where["line 3"]
    assert "tier 'L9'" in where["line 4"]
    assert "language 'fr'" in where["line 5"]
    assert "placeholder" in where["line 6"]
    assert "empty" in where["line 7"]
    assert "fields" in where["line 8"]
    assert "tier L2 earlier, L3 here" in where["line 9"]
    assert snapshot() == before
    assert router_version_get().version == version


def test_a_database_error_mid_apply_rolls_everything_back() -> None:
    # A text too long for the column would fail the INSERT after the intents were
    # written; the parser catches it first, per line, so force the rollback with a
    # row the database itself rejects: a template key longer than the column.
    before = snapshot()
    bundle = bundle_parse(GIFT_CSV, fmt="csv")
    bundle.templates[0] = type(bundle.templates[0])("gift_card", "k" * 80, "en", "x", "line 5")
    from routing.interchange import bundle_apply

    with pytest.raises(Exception):  # noqa: B017 - the database's own error type
        bundle_apply(bundle)

    assert snapshot() == before


def test_json_and_csv_and_rasa_exports_read_back_to_the_same_data() -> None:
    intents_import(GIFT_CSV, fmt="csv")
    intents_import(
        "intent,tier,text\ncomplaint,L3,this is unacceptable\n", fmt="csv", default_language="en"
    )
    original = snapshot()
    for fmt in ("json", "csv", "rasa"):
        exported = intents_export(fmt=fmt)
        # Same data again: nothing to change.
        plan = intents_import(exported, fmt=fmt, dry_run=True)
        assert plan.totals["utterances_added"] == 0, fmt
        assert plan.totals["templates_added"] == plan.totals["templates_changed"] == 0, fmt
        # Into an empty router: the same intents, examples and templates.
        Intent.objects.all().delete()
        intents_import(exported, fmt=fmt)
        assert snapshot() == original, fmt


RASA = """version: "3.1"
nlu:
- intent: delivery_time
  metadata:
    tier: L1
    description: How long delivery takes to a place
  examples: |
    - how long does delivery take to [Austin](city)?
    - when would it arrive in [Shanghai]{"entity": "city"}
    - 寄到上海要几天
- regex: zip
  examples: |
    - \\d{5}
- intent: greet
  metadata: {tier: L1}
  examples: |
    - hi there
    - hello
responses:
  utter_greet:
  - text: Hi! How can I help?
  - text: Hello!
  utter_goodbye:
  - text: Bye
"""


def test_rasa_nlu_import_strips_entities_reads_metadata_and_responses() -> None:
    plan = intents_import(RASA, fmt="rasa")

    assert plan.skipped == 2  # the regex entry and utter_goodbye (no such intent)
    assert Intent.objects.get(name="delivery_time").tier == "L1"
    assert (
        Intent.objects.get(name="delivery_time").description == "How long delivery takes to a place"
    )
    texts = set(
        Utterance.objects.filter(intent__name="delivery_time").values_list("language", "text")
    )
    assert texts == {
        ("en", "how long does delivery take to Austin?"),
        ("en", "when would it arrive in Shanghai"),
        ("zh", "寄到上海要几天"),
    }
    template = ReplyTemplate.objects.get(intent__name="greet")
    assert (template.key, template.language, template.text) == (
        "default",
        "en",
        "Hi! How can I help?",
    )


def test_malformed_rasa_names_the_lines() -> None:
    bad = """version: "3.1"
nlu:
- intent: greet
  metadata: {tier: L1}
  examples: |
    - hi
    hello without a dash
    - hey
- intent: "has space"
  metadata: {tier: L1}
  examples: |
    - x
- intent: no_examples
  metadata: {tier: L1}
"""
    with pytest.raises(ImportFailed) as failed:
        intents_import(bad, fmt="rasa")
    assert [str(e) for e in failed.value.errors] == [
        "line 7: an example starts with '- ': 'hello without a dash'",
        "line 9: intent name 'has space' must be 1-64 letters, digits, '-' or '_'",
        "line 13: intent 'no_examples' has no examples: block",
    ]
    assert not Intent.objects.exists()

    with pytest.raises(ImportFailed) as syntax:
        intents_import("nlu:\n- intent: a\n  examples: [unclosed\n", fmt="rasa")
    assert syntax.value.errors[0].where.startswith("line ")
    assert "not YAML" in syntax.value.errors[0].message


def test_malformed_json_names_the_items() -> None:
    with pytest.raises(ImportFailed) as syntax:
        intents_import('{"intents": [\n{"name": "a",}\n]}', fmt="json")
    assert syntax.value.errors[0].where == "line 2"

    bad = json.dumps(
        {
            "intents": [
                {"name": "ok", "tier": "L1", "utterances": {"en": ["fine"]}},
                {"name": "x", "tier": "L1", "utterances": {"en": ["good", 5]}},
                {"tier": "L1"},
            ]
        }
    )
    with pytest.raises(ImportFailed) as failed:
        intents_import(bad, fmt="json")
    assert [e.where for e in failed.value.errors] == [
        "intents[1] (x).utterances.en[1]",
        "intents[2]",
    ]
    assert not Intent.objects.exists()


def test_replace_and_disable_missing() -> None:
    intents_import(GIFT_CSV, fmt="csv")
    intents_import("intent,tier,text\nother,L3,something else entirely\n", fmt="csv")

    plan = intents_import(
        "intent,text\ngift_card,do gift cards expire\n",
        fmt="csv",
        replace=True,
        disable_missing=True,
    )

    assert plan.totals["utterances_removed"] == 2
    assert list(
        Utterance.objects.filter(intent__name="gift_card").values_list("text", flat=True)
    ) == ["do gift cards expire"]
    # Disabled, not deleted: the examples stay.
    assert dict(Intent.objects.values_list("name", "enabled")) == {
        "gift_card": True,
        "store_hours": False,
        "other": False,
    }
    assert Utterance.objects.filter(intent__name="store_hours").count() == 3


def test_management_commands(tmp_path: Path) -> None:
    source = tmp_path / "intents.csv"
    source.write_text(GIFT_CSV, encoding="utf-8")
    out = io.StringIO()

    call_command("intents_import", str(source), "--dry-run", stdout=out)
    assert "would apply: intents_created 2" in out.getvalue()
    assert not Intent.objects.exists()

    call_command("intents_import", str(source), "--retrain", stdout=out)
    assert "'outcome': 'trained'" in out.getvalue()
    target = tmp_path / "nlu.yml"
    call_command("intents_export", "--format", "rasa", "-o", str(target), stdout=out)
    assert "- intent: gift_card" in target.read_text(encoding="utf-8")

    broken = tmp_path / "broken.csv"
    broken.write_text("intent,text\nbad name,hi\n", encoding="utf-8")
    err = io.StringIO()
    with pytest.raises(CommandError, match="1 error"):
        call_command("intents_import", str(broken), "--default-tier", "L1", stderr=err)
    assert "broken.csv: line 2: intent name 'bad name'" in err.getvalue()
