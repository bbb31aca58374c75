"""The evaluation's pipeline on a small sample: generated sessions through the real
module, verified and scored by the server code (make eval-bot runs the full size)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.eval_bot import main, sessions_generate
from chatbot.botcheck import BotSession, evidence_parse


def test_small_evaluation_meets_the_targets() -> None:
    outcomes: dict[str, list[tuple[str, str]]] = {"bot": [], "human": [], "adaptive": []}
    for s in sessions_generate(per_kind=10, seed=3):
        bot = BotSession(mode="enforce", nonce=bytes.fromhex(s["nonce"]))
        ev = evidence_parse({"v": 1, "seq": 1, "f": s["f"], "fp": s["fp"]}, signed_text=s["text"])
        verdict = bot.check(ev, text=s["text"].strip())
        outcomes[s["label"]].append((verdict.action, verdict.reason))
    assert len(outcomes["bot"]) == 60 and len(outcomes["human"]) == 60
    detected = sum(a in ("refuse", "challenge") for a, _ in outcomes["bot"]) / 60
    false_pos = sum(a != "allow" for a, _ in outcomes["human"]) / 60
    assert detected >= 0.95 and false_pos <= 0.01
    # Every fingerprint from the module verified: the outcomes are the score's.
    reasons = {r for _, r in outcomes["bot"] + outcomes["human"] + outcomes["adaptive"]}
    assert reasons <= {"ok", "suspect", "bot"}


def test_eval_report_is_written(tmp_path: Path) -> None:
    out = tmp_path / "bot_eval.json"
    assert main(["--per-kind", "5", "--seed", "4", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["scripted_sessions"] == 30 and report["human_like_sessions"] == 30
    assert report["false_positive_rate"] <= 0.01 and report["detection_rate"] >= 0.95
