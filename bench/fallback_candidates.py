"""Fallback model candidates side by side: the L3 prompt, a few shopper questions.

Each model (a GGUF file with its sha256, checked before loading like every model here)
answers the same questions, in English and Chinese, from the same shop records, with
the L3 system prompt and generation settings (``chatbot.answerers.l3``). The records
and questions are written for this check, not taken from an evaluation set. A reply is
graded on what it must say (the carrier, the return window for the shopper's level) or,
for the question the records don't answer, on saying so; and a Chinese question must
get a Chinese reply that is not the question repeated. The replies are stored for
reading. One slot, one question at a time, bounded tokens: small enough for a shared
machine, too small for more than "which of these is usable".

Run: ``python -m bench.fallback_candidates --model NAME=PATH=SHA256 [--model ...]``
(bench/results/fallback_candidates.json). Without ``--model``: the catalogue's fallback.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "fallback_candidates.json"

RECORDS = {
    "en": (
        "Order #W1234567, placed Nov 2, 2026: Wool scarf (grey) $39.00, status: shipped, "
        "carrier UPS, tracking 1Z999AA10123456784.\n"
        "Help article 'Returns': Gold members may return items at any time; Silver members "
        "within 6 months; others within 30 days."
    ),
    "zh": (
        "订单 #W1234567，下单日期 2026年11月2日：羊毛围巾（灰色）$39.00，状态：已发货，"
        "承运商 UPS，运单号 1Z999AA10123456784。\n"
        "帮助文章《退货》：金卡会员可随时退货；银卡会员 6 个月内；其他会员 30 天内。"
    ),
}
# (language, question, what the reply must contain; None: the records don't answer it)
QUESTIONS: list[tuple[str, str, re.Pattern[str] | None]] = [
    ("en", "Where is my scarf and which carrier has it?", re.compile(r"UPS")),
    ("en", "I'm a Silver member, how long do I have to return it?", re.compile(r"6 months")),
    ("en", "Can I get a discount code for my next order?", None),
    ("zh", "我的围巾到哪里了？是哪家快递？", re.compile(r"UPS")),
    ("zh", "我是银卡会员，退货期限是多久？", re.compile(r"6\s*个月|六个月")),
    ("zh", "能给我下次订单的优惠码吗？", None),
]
CANT = {
    "en": re.compile(r"can(?:no|')t|unable|not able|don't have|no (?:record|information)", re.I),
    "zh": re.compile(r"无法|不能|没有|不确定"),
}
CJK = re.compile(r"[\u4e00-\u9fff]")


def grade(language: str, question: str, must: re.Pattern[str] | None, reply: str) -> bool:
    text = reply.strip()
    if not text:
        return False
    # The records copied back hold every fact but answer nothing.
    if any(line[:60] in text for line in RECORDS[language].splitlines()):
        return False
    if language == "zh" and (not CJK.search(text) or text.startswith(question[:6])):
        return False
    if must is None:
        return bool(CANT[language].search(text))
    return bool(must.search(text))


def candidate_run(name: str, path: str, sha256: str, max_tokens: int) -> list[dict[str, Any]]:
    from inference.backends.llamacpp import LlamaCppBackend
    from inference.base import GenerationRequest
    from inference.prompts import SYSTEM_PROMPT, chat_messages, l3_question

    backend = LlamaCppBackend(
        "fallback",
        {"model": name, "path": path, "sha256": sha256, "n_parallel": 1, "n_ctx_per_slot": 2048},
    )
    backend.load()
    rows: list[dict[str, Any]] = []
    try:
        for language, question, must in QUESTIONS:
            messages = chat_messages(
                system=SYSTEM_PROMPT[language],
                history=[],
                question=l3_question(
                    records=RECORDS[language], question=question, language=language
                ),
            )
            request = GenerationRequest(
                messages=messages, max_tokens=max_tokens, temperature=0.1, seed=7
            )
            started = time.perf_counter()
            first: float | None = None
            reply = ""
            for chunk in backend.stream(request):
                if first is None and chunk.text:
                    first = time.perf_counter() - started
                reply += chunk.text
            rows.append(
                {
                    "model": name,
                    "language": language,
                    "question": question,
                    "correct": grade(language, question, must, reply),
                    "first_token_ms": round((first or 0.0) * 1000),
                    "total_ms": round((time.perf_counter() - started) * 1000),
                    "reply": reply.strip(),
                }
            )
            print(json.dumps(rows[-1], ensure_ascii=False), flush=True)
    finally:
        backend.close()
    return rows


def figures_of(rows: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for name in names:
        for language in ("en", "zh"):
            mine = [r for r in rows if r["model"] == name and r["language"] == language]
            firsts = sorted(r["first_token_ms"] for r in mine)
            figures[f"{name} {language}"] = {
                "correct": f"{sum(r['correct'] for r in mine)} of {len(mine)}",
                "first_token_ms_p50": firsts[len(firsts) // 2] if firsts else None,
            }
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", action="append", default=[], help="NAME=PATH=SHA256")
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument(
        "--regrade", action="store_true", help="grade the replies stored in --out again"
    )
    args = parser.parse_args(argv)
    if args.regrade:
        out = json.loads(Path(args.out).read_text(encoding="utf-8"))
        musts = {q: must for _lang, q, must in QUESTIONS}
        for row in out["rows"]:
            row["correct"] = grade(
                row["language"], row["question"], musts[row["question"]], row["reply"]
            )
        out["figures"] = figures_of(
            out["rows"], list(dict.fromkeys(r["model"] for r in out["rows"]))
        )
        Path(args.out).write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
        print(json.dumps(out["figures"], indent=1, ensure_ascii=False))
        return 0
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["TIERDESK_WARMUP_ON_START"] = "false"
    import django

    django.setup()
    from django.conf import settings

    from inference.catalog import CATALOG

    models = [tuple(spec.split("=", 2)) for spec in args.model]
    if not models:
        entry = CATALOG[settings.INFERENCE_BACKENDS["fallback"]["CONFIG"]["model"]]
        models = [(entry.name, str(settings.TIERDESK_MODEL_DIR / entry.filename), entry.sha256)]
    rows: list[dict[str, Any]] = []
    for name, path, sha256 in models:
        rows += candidate_run(name, path, sha256, args.max_tokens)
    figures = figures_of(rows, [name for name, _path, _sha in models])
    out = {
        "generated_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": "python -m bench.fallback_candidates "
        + " ".join(f"--model {n}=…" for n, _p, _s in models),
        "load_average": os.getloadavg(),
        "figures": figures,
        "rows": rows,
    }
    Path(args.out).write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(json.dumps(figures, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
