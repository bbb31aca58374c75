"""Plausibility score: how much one message's input looks scripted.

Each rule is a known tell of scripted input, with a weight; the weights add up to the
bot score (0 = nothing suspicious). The policy compares it with the shop's thresholds
(service.py). Rules only fire with enough evidence to judge (enough keys, enough pointer
samples), so a short "yes" typed without a mouse is not punished for being short.
Why each feature separates people from scripts: docs/botcheck.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from .features import Features

# Evidence needed before a rhythm or a path is judged.
MIN_KEYS_FOR_RHYTHM = 6
MIN_POINTER_SAMPLES = 8

# (signal, weight). A "bot" verdict needs more than one tell at the default thresholds
# (challenge at 0.5, refuse at 0.8), except for input no person can produce.
WEIGHTS: dict[str, float] = {
    # Text arrived with no key presses and no pointer or touch at all: set by script.
    "no_input": 0.6,
    # Typing rhythm: people's inter-key intervals vary (CV ~0.4-0.8) and spread over
    # many log-spaced bins; scripts type at a fixed delay.
    "uniform_key_intervals": 0.6,
    "low_key_entropy": 0.3,
    # Synthetic key events are released the instant they are pressed.
    "zero_key_hold": 0.3,
    # Pointer: people move in curved, accelerating strokes; scripts interpolate lines.
    "straight_pointer_path": 0.5,
    "constant_pointer_speed": 0.3,
    # Keys but no pointer: keyboard-only people exist, so this alone only adds a little.
    "no_pointer": 0.2,
    # Many characters, next to no key presses (a paste): common for people, weak alone.
    "text_without_keys": 0.2,
}


@dataclass(frozen=True)
class Score:
    value: float
    signals: tuple[str, ...]


def score_features(features: Features, *, text_length: int) -> Score:
    f = features
    signals: list[str] = []
    keys = f.key_count
    pointer = f.pointer_samples
    has_pointer = pointer >= MIN_POINTER_SAMPLES
    if keys < 2 and pointer < 2 and f.touch_moves < 2:
        signals.append("no_input")
    if keys >= MIN_KEYS_FOR_RHYTHM:
        if f.key_interval_cv < 0.15:
            signals.append("uniform_key_intervals")
        if f.key_interval_entropy < 0.45:
            signals.append("low_key_entropy")
    if keys >= 2 and f.key_hold_mean_ms < 8.0:
        signals.append("zero_key_hold")
    if has_pointer and f.pointer_path_px >= 50.0:
        # Interpolated lines: straight end to end, or straight between corners.
        if (
            f.pointer_straightness > 0.985 and f.pointer_turn_std < 0.05
        ) or f.pointer_straight_share > 0.8:
            signals.append("straight_pointer_path")
        if f.pointer_speed_cv < 0.2:
            signals.append("constant_pointer_speed")
    if not has_pointer and keys >= 2 and f.touch_moves < 2:
        signals.append("no_pointer")
    if text_length >= 8 and keys < 3 and "no_input" not in signals:
        signals.append("text_without_keys")
    return Score(value=round(sum(WEIGHTS[s] for s in signals), 3), signals=tuple(signals))
