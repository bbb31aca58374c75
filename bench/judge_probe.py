"""Can a local model tell "this passage answers the question" where L2's lexical
coverage check says it doesn't? An offline measurement, no WebSocket.

For every question of the *tuned* sets (the dev split and the probe files already read),
L2's plan is built against the evaluation's knowledge base (the one ``python -m
bench.answers`` builds; reused when a run left it in the database). Where retrieval
found relevant passages but the coverage check refused them (L2 would say it doesn't
know), each judge role is asked whether the best passage answers the question, yes or
no (``knowledge.judge``), side by side on the same questions. The figures are the
yes-rate on answerable questions (answers the check lost) beside the yes-rate on
unanswerable ones (abstentions a "yes" would turn into answers). Writes
bench/results/judge_probe.json.

Run: ``make bench-judge`` (python -m bench.judge_probe [--sets dev,probe,...] [--roles ...]).
The 1.5B "large" model is optional: without its packages "large" is the 0.5B again.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ANSWERS = ROOT / "bench" / "sets" / "answers" / "demo"
TUNED = ("dev", "probe", "probe2", "probe3", "probe4", "probe5")


def questions(sets: list[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name in sets:
        path = ANSWERS / ("questions.jsonl" if name in ("dev", "test") else f"{name}.jsonl")
        for line in path.read_text().splitlines():
            row = json.loads(line)
            if name in ("dev", "test") and row["split"] != name:
                continue
            out.append(row)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default=",".join(TUNED))
    parser.add_argument("--roles", default="fallback,large", help="judge roles, side by side")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "judge_probe.json"))
    args = parser.parse_args(argv)
    from bench.answers import setup_django

    setup_django()
    import django

    django.setup()
    from bench.answers import knowledge_prepare, knowledge_reuse
    from knowledge import answer as kanswer
    from knowledge.judge import answers_question
    from knowledge.retrieval import passages_retrieve

    # The evaluation's knowledge base (demo KB + its own articles, extractive cards
    # approved as `make eval-answers` does), reused when an earlier run left it.
    knowledge = knowledge_reuse() or knowledge_prepare(card_role="")
    roles = args.roles.split(",")
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    for q in questions(args.sets.split(",")):
        lang = q["lang"]
        if kanswer.approved_card(question=q["question"], language=lang) is not None:
            continue
        result = passages_retrieve(question=q["question"], language=lang)
        chosen = kanswer.coverage_first(q["question"], [p for p in result.passages if p.relevant])
        if not chosen:
            continue
        explain: dict[str, Any] = {}
        top = chosen[0]
        # The same refusal as L2's plan, and never an article's lead (judged_answer).
        if not kanswer.coverage_refuses(q["question"], chosen, explain) or kanswer.is_lead(top):
            continue
        right = bool(q.get("section")) and (q["section"] in top.heading)
        row: dict[str, Any] = {
            "id": q["id"],
            "answerable": q["kind"] != "unanswerable",
            "right_section": right,
            "missing": explain["question_coverage"]["missing"],
        }
        for role in roles:
            t0 = time.perf_counter()
            row[role] = answers_question(q["question"], [top], role=role)
            row[f"{role}_ms"] = round((time.perf_counter() - t0) * 1000)
        rows.append(row)
        print(json.dumps(rows[-1], ensure_ascii=False), flush=True)

    ans = [r for r in rows if r["answerable"]]
    ans_right = [r for r in ans if r["right_section"]]
    un = [r for r in rows if not r["answerable"]]
    figures: dict[str, Any] = {
        "coverage_refused_answerable": len(ans),
        "coverage_refused_answerable_right_section": len(ans_right),
        "coverage_refused_unanswerable": len(un),
    }
    for role in roles:

        def share(sel: list[dict[str, Any]], role: str = role) -> float | None:
            return round(sum(r[role] for r in sel) / len(sel), 3) if sel else None

        times = sorted(r[f"{role}_ms"] for r in rows)
        figures |= {
            f"{role}_judge_yes_rate_answerable": share(ans),
            f"{role}_judge_yes_rate_answerable_right_section": share(ans_right),
            f"{role}_judge_yes_rate_unanswerable": share(un),
            f"{role}_judge_ms_p50": times[len(times) // 2] if times else None,
        }
    out = {
        "generated_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": f"python -m bench.judge_probe --sets {args.sets} --roles {args.roles}",
        "roles": roles,
        "database": os.environ.get("DATABASE_URL", ""),
        "knowledge_base": knowledge,
        "seconds": round(time.perf_counter() - started),
        "figures": figures,
        "rows": rows,
    }
    Path(args.out).write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
