"""The feature vector the WebAssembly module computes (slots in milli-units)."""

from __future__ import annotations

from dataclasses import dataclass

# Order matters: it is the order of the digest and of frontend/wasm/botcheck.ts.
FEATURE_NAMES: tuple[str, ...] = (
    "pointer_samples",  # mouse moves (touch moves on a phone without a mouse)
    "pointer_path_px",
    "pointer_straightness",  # chord / path per stroke: 1.0 is a ruler-straight line
    "pointer_speed_cv",  # std / mean of the speed between samples
    "pointer_accel_cv",  # std / mean |acceleration|
    "pointer_turn_std",  # std of the turning angle between segments, radians
    "pointer_pause_share",  # share of gaps over 300 ms (stop, aim, move again)
    "key_count",  # key presses (never which keys)
    "key_interval_mean_ms",
    "key_interval_cv",
    "key_interval_entropy",  # Shannon entropy over 32 log bins, / its maximum for n
    "key_long_pause_share",  # share of intervals over 500 ms
    "key_hold_mean_ms",  # key down to key up
    "touch_moves",
    "focus_changes",  # focus, blur and visibility changes
    "compose_ms",  # first event to the send
    "pointer_is_touch",  # 1 when slots 0..6 describe touch
    "pointer_straight_share",  # share of turns under 0.02 rad: lines, even with corners
)
N_FEATURES = len(FEATURE_NAMES)


@dataclass(frozen=True)
class Features:
    """The vector in natural units (the wire carries integers x 1000)."""

    values: tuple[float, ...]

    @classmethod
    def from_milli(cls, raw: tuple[int, ...]) -> Features:
        return cls(values=tuple(v / 1000.0 for v in raw))

    def __getattr__(self, name: str) -> float:
        try:
            return self.values[FEATURE_NAMES.index(name)]
        except ValueError:
            raise AttributeError(name) from None

    def as_dict(self) -> dict[str, float]:
        return dict(zip(FEATURE_NAMES, self.values, strict=True))
