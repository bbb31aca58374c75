"""A new release's seed reaches a database seeded by an older one (routing/seed.py):
untouched rows follow it, admin edits are kept and reported, rows from before seed
hashes adopt them when equal, ``router_seed --reset`` restores an edited row.

The "new release" is simulated by changing the parsed seed data the seed functions
read (their cached JSON), which is exactly what a new rules.json/templates.json is to
them. No models; real PostgreSQL. Seconds.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from routing import router as router_module
from routing import seed as seed_module
from routing import templates as templates_module
from routing.models import Intent, ReplyTemplate, Rule, SlotPattern
from routing.seed import intents_seed, seed_hash
from routing.seed_templates import router_seed, templates_seed
from routing.templates import template_get
from routing.versioning import router_version_get

pytestmark = pytest.mark.django_db

NEW_COMPARISON = r"\bversus\b|\bcompared? to\b|\bnew-release-marker\b"
NEW_PENDING = "New release: order {order_id} is {status_text}."


class Release:
    """The shipped seed files, editable as a new release would change them."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.rules: dict[str, Any] = _json(seed_module.SEED_DIR / "rules.json")
        self.intents: dict[str, Any] = _json(seed_module.SEED_DIR / "intents.json")
        self.templates: dict[str, Any] = _json(templates_module.SEED_FILE)
        self.ship()

    def ship(self) -> None:
        for name, data in (
            ("rules.json", self.rules),
            ("intents.json", self.intents),
            ("templates.json", self.templates),
        ):
            (self.directory / name).write_text(json.dumps(data, ensure_ascii=False), "utf-8")
        _seed_caches_clear()

    def rule(self, name: str) -> dict[str, Any]:
        rule: dict[str, Any] = next(r for r in self.rules["rules"] if r["name"] == name)
        return rule


def _json(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _seed_caches_clear() -> None:
    for loader in (
        seed_module.seed_rules_data,
        seed_module.seed_intents_data,
        seed_module.seed_utterances_by_intent,
        seed_module.seed_history,
        templates_module.seed_templates,
    ):
        loader.cache_clear()


@pytest.fixture
def release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Release]:
    """Points the seed at a copy of seed_data/ that the test edits; restored after."""
    shipped = Release(tmp_path)
    monkeypatch.setattr(seed_module, "SEED_DIR", tmp_path)
    monkeypatch.setattr(templates_module, "SEED_FILE", tmp_path / "templates.json")
    _seed_caches_clear()
    yield shipped
    monkeypatch.undo()
    _seed_caches_clear()


def _seed_all() -> None:
    intents_seed()
    templates_seed()


def test_a_changed_seed_updates_untouched_rows_and_the_router_sees_it(
    release: Release,
) -> None:
    _seed_all()
    assert Rule.objects.get(name="comparison").seed_hash  # seeded rows remember their seed
    before = router_version_get()
    assert router_module.rule_cache.get().rules  # the compiled rules are cached now
    release.rule("comparison")["pattern"] = NEW_COMPARISON
    release.rule("comparison")["priority"] = 21
    release.templates["order_status"]["pending"]["en"] = NEW_PENDING
    release.rules["slot_patterns"][2]["regex"] = r"(?P<value>\d{5})"
    greeting = next(i for i in release.intents["intents"] if i["name"] == "greeting")
    greeting["description"] = "Hello and goodbye (new release)."
    release.ship()

    report = router_seed()

    rule = Rule.objects.get(name="comparison")
    assert (rule.pattern, rule.priority) == (NEW_COMPARISON, 21)
    assert rule.seed_hash == seed_hash("rule", seed_module.rule_values(release.rule("comparison")))
    assert (
        ReplyTemplate.objects.get(intent__name="order_status", key="pending", language="en").text
        == NEW_PENDING
    )
    assert SlotPattern.objects.get(name="zip").regex == r"(?P<value>\d{5})"
    assert Intent.objects.get(name="greeting").description == "Hello and goodbye (new release)."
    assert sorted(report.updated) == [
        "intent:greeting",
        "rule:comparison",
        "slot:zip",
        "template:order_status.pending.en",
    ]
    assert report.edited == report.diverged == report.adopted == []
    # Every process's caches: the version moved and this process reads the new data.
    assert router_version_get().version > before.version
    assert template_get(intent="order_status", key="pending", language="en") == NEW_PENDING
    compiled = {r.name: r for r in router_module.rule_cache.get().rules}
    assert compiled["comparison"].regex is not None
    assert compiled["comparison"].regex.pattern == NEW_COMPARISON


def test_a_template_only_release_moves_the_router_version(release: Release) -> None:
    # Other processes' template caches follow the version, not this process's reset.
    _seed_all()
    before = router_version_get()
    release.templates["order_status"]["pending"]["zh"] = "新版本：订单{order_id}{status_text}。"
    release.ship()

    templates_seed()

    assert router_version_get().version > before.version
    unchanged = router_version_get()
    templates_seed()
    assert router_version_get() == unchanged  # nothing to do: no bump, no retraining


def test_an_admin_edit_is_kept_and_reported(
    release: Release, caplog: pytest.LogCaptureFixture
) -> None:
    _seed_all()
    Rule.objects.filter(name="comparison").update(priority=5)  # the admin's edit
    ReplyTemplate.objects.filter(intent__name="order_status", key="pending", language="en").update(
        text="Our own words for {order_id}."
    )
    release.rule("comparison")["pattern"] = NEW_COMPARISON
    release.templates["order_status"]["pending"]["en"] = NEW_PENDING
    release.ship()
    # An edit to a row whose shipped seed did not change is kept too, but quietly.
    Rule.objects.filter(name="two-requests").update(enabled=False)

    with caplog.at_level(logging.INFO, logger="routing.seed"):
        intents_seed()
        templates_seed()

    rule = Rule.objects.get(name="comparison")
    assert rule.priority == 5 and rule.pattern != NEW_COMPARISON
    assert not Rule.objects.get(name="two-requests").enabled
    assert (
        ReplyTemplate.objects.get(intent__name="order_status", key="pending", language="en").text
        == "Our own words for {order_id}."
    )
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2  # one per seed function
    assert "router seed: 1 rows kept that differ" in warnings[0]
    assert "rule:comparison" in warnings[0]
    assert "template:order_status.pending.en" in warnings[1]
    assert "router_seed --reset" in warnings[0]
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert any("edited in the admin" in m and "rule:two-requests" in m for m in infos)

    report = router_seed(dry_run=True)
    assert report.diverged == ["rule:comparison", "template:order_status.pending.en"]
    assert report.edited == ["rule:two-requests"]


def test_a_row_edited_back_to_its_seed_follows_the_seed_again(release: Release) -> None:
    _seed_all()
    Rule.objects.filter(name="comparison").update(priority=5)
    Rule.objects.filter(name="comparison").update(priority=20)  # undone
    release.rule("comparison")["priority"] = 22
    release.ship()

    assert router_seed().updated == ["rule:comparison"]
    assert Rule.objects.get(name="comparison").priority == 22


def test_legacy_rows_adopt_the_hash_when_equal_and_are_kept_when_not(
    release: Release,
) -> None:
    _seed_all()
    # A database seeded before seed hashes existed: what migration 0007 leaves.
    for model in (Intent, Rule, SlotPattern, ReplyTemplate):
        model._default_manager.update(seed_hash="")
    Rule.objects.filter(name="comparison").update(pattern=r"\bvs\b")  # an older seed's, or an edit
    before = router_version_get()

    report = router_seed()

    assert "rule:handoff-request" in report.adopted
    assert "template:order_status.pending.en" in report.adopted
    handoff = Rule.objects.get(name="handoff-request")
    assert handoff.seed_hash == seed_hash("rule", seed_module.rule_current(handoff))
    assert report.diverged == ["rule:comparison"]
    assert Rule.objects.get(name="comparison").pattern == r"\bvs\b"
    assert Rule.objects.get(name="comparison").seed_hash == ""
    # Adopting a hash changes nothing the router sees: no new version, no retraining.
    assert router_version_get() == before

    # The adopted rows now follow the next release.
    release.rule("handoff-request")["priority"] = 16
    release.ship()
    assert router_seed().updated == ["rule:handoff-request"]
    assert Rule.objects.get(name="handoff-request").priority == 16


def test_a_legacy_row_equal_to_an_earlier_release_is_updated(release: Release) -> None:
    # seed_history.json lists what releases shipped before seed hashes: a legacy row
    # still holding one of those values is that release's seed, untouched.
    _seed_all()
    for model in (Intent, Rule, SlotPattern, ReplyTemplate):
        model._default_manager.update(seed_hash="")
    old = dict(release.rule("comparison"), priority=25)  # what an older release shipped
    Rule.objects.filter(name="comparison").update(priority=25)
    Rule.objects.filter(name="two-requests").update(priority=26)  # not in the history
    history = {"rule:comparison": [seed_hash("rule", seed_module.rule_values(old))]}
    (release.directory / "seed_history.json").write_text(json.dumps(history), "utf-8")
    release.ship()

    report = router_seed()

    assert report.updated == ["rule:comparison"]
    assert Rule.objects.get(name="comparison").priority == release.rule("comparison")["priority"]
    assert report.diverged == ["rule:two-requests"]
    assert Rule.objects.get(name="two-requests").priority == 26


def test_the_shipped_history_knows_the_releases_before_seed_hashes() -> None:
    # Written once from git (scripts/seed_history.py, 18 versions of the seed files);
    # the handoff rule's pattern changed in six of them.
    history = seed_module.seed_history()
    assert len(history["rule:handoff-request"]) == 6
    assert len(history["template:order_status.pending.en"]) >= 1


def test_reset_restores_an_edited_row(release: Release) -> None:
    _seed_all()
    Rule.objects.filter(name="comparison").update(priority=5, enabled=False)
    ReplyTemplate.objects.filter(intent__name="order_status", key="pending", language="zh").update(
        text="改过的"
    )
    Rule.objects.filter(name="two-requests").update(priority=7)  # not named: kept
    out = StringIO()

    call_command(
        "router_seed", "--reset", "comparison", "template:order_status.pending.zh", stdout=out
    )

    rule = Rule.objects.get(name="comparison")
    shipped = release.rule("comparison")
    assert (rule.priority, rule.enabled) == (shipped["priority"], True)
    assert rule.seed_hash == seed_hash("rule", seed_module.rule_values(shipped))
    zh = ReplyTemplate.objects.get(intent__name="order_status", key="pending", language="zh")
    assert zh.text == release.templates["order_status"]["pending"]["zh"]
    assert Rule.objects.get(name="two-requests").priority == 7
    text = out.getvalue()
    assert "reset to the shipped seed: 2" in text
    assert "  rule:comparison" in text
    assert "kept, edited in the admin: 1" in text and "  rule:two-requests" in text

    # The reset row is an ordinary seeded row again: the next release updates it.
    shipped["priority"] = 19
    release.ship()
    assert router_seed().updated == ["rule:comparison"]


def test_reset_refuses_unknown_and_ambiguous_names(release: Release) -> None:
    _seed_all()
    release.rules["slot_patterns"].append({"name": "greeting", "regex": "hi"})
    release.ship()

    with pytest.raises(CommandError, match="'no-such-rule' is not a shipped seed row"):
        call_command("router_seed", "--reset", "no-such-rule", stdout=StringIO())
    with pytest.raises(CommandError, match="'greeting' is ambiguous"):
        call_command("router_seed", "--reset", "greeting", stdout=StringIO())
    assert not SlotPattern.objects.filter(name="greeting").exists()  # nothing written


def test_dry_run_writes_nothing(release: Release) -> None:
    _seed_all()
    release.rule("comparison")["priority"] = 23
    release.ship()
    out = StringIO()

    call_command("router_seed", "--dry-run", stdout=out)

    assert Rule.objects.get(name="comparison").priority == 20
    assert "updated to the shipped seed: 1" in out.getvalue()


def test_a_rule_only_the_admin_disabled_is_not_reenabled_by_an_update(
    release: Release,
) -> None:
    # The seed's values include enabled=True: a disabled seed rule is an edit, so a new
    # release never switches back on a rule a support admin turned off.
    _seed_all()
    Rule.objects.filter(name="angry-complaint").update(enabled=False)
    release.rule("angry-complaint")["keywords"].append("outrageous")
    release.ship()

    report = router_seed()

    rule = Rule.objects.get(name="angry-complaint")
    assert not rule.enabled and "outrageous" not in rule.keywords
    assert report.diverged == ["rule:angry-complaint"]
