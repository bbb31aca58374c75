"""The WebAssembly module: reproducible build, size, and the same digest as the server."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path
from typing import Any

from chatbot.botcheck import FEATURE_NAMES, fingerprint_digest

from .helpers import REPO, wasm_run

COMMITTED = REPO / "frontend" / "static" / "tierdesk" / "botcheck.wasm"
NONCE = "000102030405060708090a0b0c0d0e0f"


def test_rebuild_gives_the_committed_bytes_and_stays_under_20_kb(tmp_path: Path) -> None:
    out = tmp_path / "botcheck.wasm"
    subprocess.run(
        ["bash", "scripts/wasm-build.sh", str(out)],
        cwd=REPO,
        check=True,
        capture_output=True,
        timeout=300,
    )
    assert out.read_bytes() == COMMITTED.read_bytes()
    assert len(COMMITTED.read_bytes()) < 20 * 1024


def _line(n: int = 40) -> list[list[float]]:
    return [[0, i * 16.0, 100.0 + 10 * i, 200.0 + 5 * i] for i in range(n)]


def test_python_digest_matches_the_module_byte_for_byte() -> None:
    texts = ["where is my order #W2611340?", "  padded  ", "\u4f60\u597d \U0001f600 caf\u00e9"]
    requests: list[dict[str, Any]] = [
        {"events": _line() + [[1, 900.0 + 130 * k, 0, 0] for k in range(8)], "nonce": NONCE,
         "seq": seq, "text": text}
        for seq, text in enumerate(texts, start=1)
    ]  # fmt: skip
    for request, result in zip(requests, wasm_run(requests), strict=True):
        assert len(result["f"]) == len(FEATURE_NAMES)
        assert result["fp"] == fingerprint_digest(
            nonce=bytes.fromhex(NONCE), seq=request["seq"], features=result["f"],
            text=request["text"],
        )  # fmt: skip
    # A different nonce gives a different fingerprint for the same input.
    other = wasm_run([{**requests[0], "nonce": "ff" * 16}])[0]
    assert other["f"] == wasm_run([requests[0]])[0]["f"]
    assert other["fp"] != wasm_run([requests[0]])[0]["fp"]


def test_features_of_known_inputs() -> None:
    arc = [
        [0, i * 16.0, 300 + 200 * math.cos(i / 12), 300 + 200 * math.sin(i / 12)] for i in range(40)
    ]
    keys = []
    for k, gap in enumerate([100, 100, 100, 100, 100, 100, 100]):
        keys += [[1, 2000.0 + k * gap, 0, 0], [2, 2000.0 + k * gap + 80, 0, 0]]
    line, curve = wasm_run(
        [
            {"events": _line() + keys, "nonce": NONCE, "seq": 1, "text": "x"},
            {"events": arc, "nonce": NONCE, "seq": 1, "text": "x"},
        ]
    )
    named = dict(zip(FEATURE_NAMES, (v / 1000 for v in line["f"]), strict=True))
    assert named["pointer_samples"] == 40
    assert named["pointer_straightness"] == 1.0  # a ruler-straight line
    assert named["pointer_turn_std"] == 0.0
    assert named["pointer_straight_share"] == 1.0
    assert named["pointer_speed_cv"] == 0.0  # equal steps at a fixed rate
    assert named["key_count"] == 7
    assert named["key_interval_mean_ms"] == 100.0
    assert named["key_interval_cv"] == 0.0
    assert named["key_interval_entropy"] == 0.0  # every interval in one bin
    assert named["key_hold_mean_ms"] == 80.0
    bent = dict(zip(FEATURE_NAMES, (v / 1000 for v in curve["f"]), strict=True))
    assert bent["pointer_straightness"] < 0.9
    assert bent["key_count"] == 0
