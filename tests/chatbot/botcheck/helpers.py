"""Feature vectors and signed evidence for the bot-check tests."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from chatbot.botcheck import FEATURE_NAMES, fingerprint_digest

REPO = Path(__file__).resolve().parents[3]

# A person who moved the mouse in curved strokes and typed with an uneven rhythm
# (values as bench/bot_sessions.mjs's human-like sessions produce them).
HUMAN = {
    "pointer_samples": 120,
    "pointer_path_px": 1100.0,
    "pointer_straightness": 0.91,
    "pointer_speed_cv": 0.75,
    "pointer_accel_cv": 1.3,
    "pointer_turn_std": 0.5,
    "pointer_pause_share": 0.01,
    "key_count": 30,
    "key_interval_mean_ms": 240.0,
    "key_interval_cv": 0.6,
    "key_interval_entropy": 0.75,
    "key_long_pause_share": 0.1,
    "key_hold_mean_ms": 95.0,
    "touch_moves": 0,
    "focus_changes": 1,
    "compose_ms": 9000.0,
    "pointer_is_touch": 0,
    "pointer_straight_share": 0.05,
}
# A script: no pointer, keys at a fixed delay, released at once.
CONSTANT_TYPIST = {
    **{name: 0.0 for name in FEATURE_NAMES},
    "key_count": 30,
    "key_interval_mean_ms": 100.0,
    "key_interval_cv": 0.01,
    "key_interval_entropy": 0.05,
    "key_hold_mean_ms": 0.3,
    "focus_changes": 1,
    "compose_ms": 3000.0,
}


def milli(values: dict[str, float]) -> list[int]:
    return [round(values[name] * 1000) for name in FEATURE_NAMES]


def evidence(nonce_hex: str, seq: int, features: dict[str, float], text: str) -> dict[str, Any]:
    f = milli(features)
    fp = fingerprint_digest(nonce=bytes.fromhex(nonce_hex), seq=seq, features=f, text=text)
    return {"v": 1, "seq": seq, "f": f, "fp": fp}


def wasm_run(requests: list[dict[str, Any]], wasm: Path | None = None) -> list[dict[str, Any]]:
    """Features and fingerprints from the real WebAssembly module (in Node)."""
    cmd = ["node", str(REPO / "bench" / "bot_wasm.mjs")] + ([str(wasm)] if wasm else [])
    proc = subprocess.run(
        cmd,
        input="\n".join(json.dumps(r) for r in requests),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
