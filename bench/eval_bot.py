"""Bot-check evaluation (make eval-bot): detection rate on scripted sessions and
false-positive rate on human-like sessions, both synthetic (docs/botcheck.md).

    .venv/bin/python -m bench.eval_bot [--per-kind 60]   # writes bench/results/bot_eval.json

bench/bot_sessions.mjs generates the sessions and runs each through the committed
botcheck.wasm; this script verifies each fingerprint against its nonce and applies the
production policy (enforce, default thresholds). Bots built to evade the check
(human-like key rhythm) are reported apart ("adaptive"). A scripted session counts as detected
when it is refused or challenged; a human-like one counts as a false positive on
either, so the false-positive rate includes every shopper who would see a challenge.
Synthetic humans are not real humans: see docs/botcheck.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "bot_eval.json"


def sessions_generate(*, per_kind: int, seed: int) -> list[dict[str, Any]]:
    out = subprocess.run(
        ["node", str(ROOT / "bench" / "bot_sessions.mjs"), "--per-kind", str(per_kind),
         "--seed", str(seed)],
        cwd=ROOT, capture_output=True, text=True, check=True, timeout=600,
    )  # fmt: skip
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def django_setup() -> None:
    # The policy is passed explicitly (BotSession(mode="enforce")); only the default
    # thresholds come from settings. Nothing else in the environment is changed.
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("TIERDESK_WARMUP_ON_START", "false")
    import django

    django.setup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-kind", type=int, default=60)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    django_setup()
    from chatbot.botcheck import BotSession, evidence_parse

    sessions = sessions_generate(per_kind=args.per_kind, seed=args.seed)
    by_kind: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    signals: dict[str, Counter[str]] = defaultdict(Counter)
    scores: dict[str, list[float]] = defaultdict(list)
    for s in sessions:
        bot = BotSession(mode="enforce", nonce=bytes.fromhex(s["nonce"]))
        evidence = evidence_parse(
            {"v": 1, "seq": s["seq"], "f": s["f"], "fp": s["fp"]}, signed_text=s["text"]
        )
        verdict = bot.check(evidence, text=s["text"].strip())
        by_kind[(s["label"], s["kind"])][verdict.action] += 1
        signals[s["label"]].update(verdict.signals)
        scores[s["label"]].append(verdict.score or 0.0)
    totals: dict[str, Counter[str]] = defaultdict(Counter)
    for (label, _kind), counts in by_kind.items():
        totals[label].update(counts)
    bots, humans, adaptive = totals["bot"], totals["human"], totals["adaptive"]
    n_bots, n_humans = sum(bots.values()), sum(humans.values())
    detected = bots["refuse"] + bots["challenge"]
    false_pos = humans["refuse"] + humans["challenge"]
    result = {
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "seed": args.seed,
        "policy": "enforce, refuse at 0.8, challenge at 0.5 (defaults)",
        "scripted_sessions": n_bots,
        "human_like_sessions": n_humans,
        "detection_rate": round(detected / n_bots, 4),
        "detection_refused_only": round(bots["refuse"] / n_bots, 4),
        "false_positive_rate": round(false_pos / n_humans, 4),
        "false_positive_refused_only": round(humans["refuse"] / n_humans, 4),
        "adaptive_sessions": sum(adaptive.values()),
        "adaptive_detection_rate": round(
            (adaptive["refuse"] + adaptive["challenge"]) / max(1, sum(adaptive.values())), 4
        ),
        "targets": {"detection_rate": ">= 0.95", "false_positive_rate": "<= 0.01"},
        "by_kind": {
            f"{label}/{kind}": dict(counts) for (label, kind), counts in sorted(by_kind.items())
        },
        "signals": {label: dict(c.most_common()) for label, c in signals.items()},
        # How far each group sits from the thresholds (challenge 0.5, refuse 0.8).
        "bot_score": {
            label: {
                "min": min(values),
                "p05": sorted(values)[len(values) // 20],
                "p50": sorted(values)[len(values) // 2],
                "p95": sorted(values)[len(values) * 19 // 20],
                "max": max(values),
            }
            for label, values in scores.items()
        },
        "note": "Synthetic humans are a model of people, not people: real shoppers "
        "(tremor, trackpads, assistive technology, autofill) will differ.",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "signals"}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
