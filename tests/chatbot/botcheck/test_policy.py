"""The server side without I/O: evidence parsing, binding, replay, scoring and modes."""

from __future__ import annotations

import pytest
from pytest_django.fixtures import Settings as SettingsWrapper

from chatbot.botcheck import (
    BotSession,
    EvidenceError,
    Features,
    Verdict,
    evidence_parse,
    score_features,
)
from chatbot.botcheck.service import Mode

from .helpers import CONSTANT_TYPIST, HUMAN, evidence, milli

TEXT = "where is my order #W2611340?"


def session(mode: Mode = "enforce") -> BotSession:
    return BotSession.open(mode=mode)


def check(
    bot: BotSession, features: dict[str, float], *, seq: int = 1, text: str = TEXT
) -> Verdict:
    ev = evidence_parse(evidence(bot.nonce.hex(), seq, features, text), signed_text=text)
    return bot.check(ev, text=text)


def test_each_connection_gets_its_own_nonce() -> None:
    a, b = session(), session()
    assert a.nonce != b.nonce and len(a.nonce) == 16
    hello = a.hello()
    assert hello == {"nonce": a.nonce.hex(), "mode": "enforce", "version": 1}
    assert session("off").hello() is None


def test_human_features_are_allowed_and_scripted_ones_refused() -> None:
    bot = session()
    allowed = check(bot, HUMAN, seq=1)
    assert allowed.action == "allow" and allowed.reason == "ok" and allowed.signals == ()
    refused = check(bot, CONSTANT_TYPIST, seq=2)
    assert refused.action == "refuse" and refused.reason == "bot"
    assert {"uniform_key_intervals", "low_key_entropy", "zero_key_hold", "no_pointer"} <= set(
        refused.signals
    )


def test_a_fingerprint_from_another_connection_is_refused() -> None:
    first, second = session(), session()
    frame = evidence(first.nonce.hex(), 1, HUMAN, TEXT)
    verdict = second.check(evidence_parse(frame, signed_text=TEXT), text=TEXT)
    assert verdict.action == "refuse" and verdict.reason == "binding"
    # And on its own connection it verifies.
    assert first.check(evidence_parse(frame, signed_text=TEXT), text=TEXT).allowed


def test_replay_on_the_same_connection_and_swapped_text_are_refused() -> None:
    bot = session()
    frame = evidence(bot.nonce.hex(), 1, HUMAN, TEXT)
    assert bot.check(evidence_parse(frame, signed_text=TEXT), text=TEXT).allowed
    again = bot.check(evidence_parse(frame, signed_text=TEXT), text=TEXT)
    assert again.action == "refuse" and again.reason == "replay"
    # The same fingerprint on other text does not verify.
    other = "cancel order #W2611340"
    swapped = bot.check(evidence_parse({**frame, "seq": 1}, signed_text=other), text=other)
    assert swapped.reason == "binding"
    # Nor does a tampered feature vector.
    tampered = dict(frame, f=milli({**HUMAN, "key_interval_cv": 0.9}))
    assert bot.check(evidence_parse(tampered, signed_text=TEXT), text=TEXT).reason == "binding"


def test_missing_fingerprint_refuses_the_connection_except_in_monitor_and_off() -> None:
    assert session("enforce").check(None, text=TEXT).action == "refuse_connection"
    assert session("challenge").check(None, text=TEXT).action == "refuse_connection"
    monitored = session("monitor").check(None, text=TEXT)
    assert monitored.allowed and monitored.reason == "monitor:missing"
    assert session("off").check(None, text=TEXT).reason == "off"


def test_modes_and_strictness(settings: SettingsWrapper) -> None:
    # challenge mode asks instead of refusing on a score; monitor only records.
    assert check(session("challenge"), CONSTANT_TYPIST).action == "challenge"
    watched = check(session("monitor"), CONSTANT_TYPIST)
    assert watched.allowed and watched.reason == "monitor:bot" and watched.score
    # A keyboard-only person: one weak signal, allowed at the default strictness...
    keyboard_only = {**HUMAN, "pointer_samples": 0, "pointer_path_px": 0.0}
    verdict = check(session(), keyboard_only)
    assert verdict.allowed and verdict.signals == ("no_pointer",)
    # ...and challenged by a shop that set the thresholds lower (stricter).
    settings.TIERDESK_BOTCHECK_CHALLENGE_AT = 0.2
    assert check(session(), keyboard_only).action == "challenge"


def test_straight_line_mouse_with_uniform_typing_scores_as_a_bot() -> None:
    scripted = {
        **CONSTANT_TYPIST,
        "pointer_samples": 20,
        "pointer_path_px": 800.0,
        "pointer_straightness": 1.0,
        "pointer_speed_cv": 0.02,
    }
    score = score_features(Features.from_milli(tuple(milli(scripted))), text_length=len(TEXT))
    assert {"straight_pointer_path", "constant_pointer_speed", "uniform_key_intervals"} <= set(
        score.signals
    )
    assert "no_pointer" not in score.signals and score.value >= 0.8


def test_a_short_reply_typed_without_a_mouse_is_not_judged_on_rhythm() -> None:
    yes = {**HUMAN, "pointer_samples": 0, "pointer_path_px": 0.0, "key_count": 4,
           "key_interval_cv": 0.05, "key_interval_entropy": 0.0}  # fmt: skip
    assert check(session(), yes, text="yes").allowed


@pytest.mark.parametrize(
    "raw",
    [
        "x",
        {"v": 2, "seq": 1, "f": [0] * 18, "fp": "0" * 16},
        {"v": 1, "seq": 0, "f": [0] * 18, "fp": "0" * 16},
        {"v": 1, "seq": 1, "f": [0] * 17, "fp": "0" * 16},
        {"v": 1, "seq": 1, "f": [0.5] * 18, "fp": "0" * 16},
        {"v": 1, "seq": 1, "f": [True] * 18, "fp": "0" * 16},
        {"v": 1, "seq": 1, "f": [0] * 18, "fp": "abc"},
    ],
)
def test_malformed_evidence_is_rejected(raw: object) -> None:
    with pytest.raises(EvidenceError):
        evidence_parse(raw, signed_text=TEXT)
