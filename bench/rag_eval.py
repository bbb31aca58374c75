"""The RAG evaluation behind ``make eval-rag`` (docs/knowledge.md):
``python -m bench.rag_eval``, run by scripts/eval-rag.sh on a fresh database.

Seeds and ingests the demo knowledge base in the current database if needed, then:

Retrieval: for every labelled question (bench/sets/rag/demo/questions.jsonl), the
documents of the top passages per method (dense, BM25, hybrid) give hit@1, hit@3 and
MRR (over the top 10), per language. Out-of-scope questions (gold = null) give the
abstention rate: the share for which no passage clears the relevance threshold, so the
bot says it doesn't know.

Answers: for a deterministic sample of questions, the real L2 prompt goes to a real
model role; ``knowledge.grounding`` checks each answer against its cited passages.

The figures are merged into bench/results/rag.json under "evaluation" (the benchmark,
bench/rag.py, owns the other keys).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ROOT / "bench" / "sets" / "rag" / "demo" / "questions.jsonl"
TARGETS = {"hit_at_3": 0.91, "mrr": 0.80, "groundedness": 0.95}


def questions_load(path: Path = QUESTIONS) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _doc_keys() -> dict[int, str]:
    from knowledge.models import Document

    return {pk: key or "" for pk, key in Document.objects.values_list("pk", "seed_key")}


def retrieval_evaluate(
    questions: list[dict[str, Any]], *, methods: tuple[str, ...] = ("dense", "bm25", "hybrid")
) -> dict[str, Any]:
    from knowledge.retrieval import passages_retrieve

    keys = _doc_keys()
    out: dict[str, Any] = {}
    for method in methods:
        per_lang: dict[str, dict[str, list[float]]] = {}
        misses: list[dict[str, Any]] = []
        for q in questions:
            lang = q["language"]
            bucket = per_lang.setdefault(
                lang, {"hit1": [], "hit3": [], "rr": [], "abstain": [], "ms": [], "answered": []}
            )
            started = time.perf_counter()
            result = passages_retrieve(
                question=q["question"], language=lang, method=method, top_k=10
            )
            bucket["ms"].append((time.perf_counter() - started) * 1000)
            docs = [keys.get(p.document_id, "") for p in result.passages]
            top3 = result.passages[:3]
            answered = any(p.relevant for p in top3)
            if q["gold"] is None:
                bucket["abstain"].append(0.0 if answered else 1.0)
                continue
            bucket["answered"].append(1.0 if answered else 0.0)
            rank = next((i + 1 for i, d in enumerate(docs) if d == q["gold"]), None)
            bucket["hit1"].append(1.0 if rank == 1 else 0.0)
            bucket["hit3"].append(1.0 if rank is not None and rank <= 3 else 0.0)
            bucket["rr"].append(1.0 / rank if rank else 0.0)
            if method == "hybrid" and (rank is None or rank > 3 or not answered):
                misses.append(
                    {
                        "id": q["id"],
                        "question": q["question"],
                        "gold": q["gold"],
                        "got": docs[:3],
                        "answered": answered,
                    }
                )
        out[method] = {
            lang: {
                "questions": len(b["hit1"]),
                "hit_at_1": _mean(b["hit1"]),
                "hit_at_3": _mean(b["hit3"]),
                "mrr": _mean(b["rr"]),
                "answered_rate_in_scope": _mean(b["answered"]),
                "out_of_scope_questions": len(b["abstain"]),
                "abstain_rate_out_of_scope": _mean(b["abstain"]),
                "latency_ms_p50": _pct(b["ms"], 50),
            }
            for lang, b in sorted(per_lang.items())
        }
        if method == "hybrid":
            out["hybrid_misses"] = misses
    return out


def answers_evaluate(
    questions: list[dict[str, Any]], *, role: str, sample_every: int = 3
) -> dict[str, Any]:
    """Generate real answers for every ``sample_every``-th labelled question."""
    from inference.registry import get_backend
    from knowledge.answer import answer_plan

    backend = get_backend(role)
    backend.load()
    picked = [q for q in questions if q["gold"] is not None][::sample_every]
    per_lang: dict[str, dict[str, list[float]]] = {}
    examples: list[dict[str, Any]] = []
    verdicts: dict[str, int] = {}
    for q in picked:
        lang = q["language"]
        bucket = per_lang.setdefault(
            lang,
            {"grounded": [], "delivered": [], "first_ms": [], "total_ms": [], "cited_gold": []},
        )
        plan = answer_plan(question=q["question"], language=lang, role=role)
        if plan.generation is None:
            bucket["grounded"].append(1.0)  # "don't know" claims nothing
            bucket["delivered"].append(1.0)
            bucket["cited_gold"].append(0.0)
            examples.append(
                {"id": q["id"], "answer": plan.text, "grounded": True, "answered": False}
            )
            continue
        examples.append(_answer_grade(q, plan, backend, bucket, verdicts))
    return _answers_summary(role, backend.model_id, per_lang, verdicts, examples)


def _answer_grade(
    q: dict[str, Any],
    plan: Any,
    backend: Any,
    bucket: dict[str, list[float]],
    verdicts: dict[str, int],
) -> dict[str, Any]:
    """Stream the model's answer to one planned question and grade it, as the model
    wrote it and as delivered after the guard; the figures go into ``bucket`` and
    ``verdicts``, the example is returned."""
    from knowledge.grounding import answer_grounding, answer_guard

    started = time.perf_counter()
    first: float | None = None
    parts: list[str] = []
    for chunk in backend.stream(plan.generation):
        if chunk.text and first is None:
            first = (time.perf_counter() - started) * 1000
        parts.append(chunk.text)
    total = (time.perf_counter() - started) * 1000
    answer = "".join(parts).strip()
    grounding = answer_grounding(answer, [p.text for p in plan.passages], question=q["question"])
    bucket["grounded"].append(1.0 if grounding.grounded else 0.0)
    # What the shopper sees: the same answer after the grounding guard (turn.py).
    passages = [p.text for p in plan.passages]
    guarded = answer_guard(
        answer,
        passages,
        question=q["question"],
        extract=(plan.grounding or {}).get("extract", ""),
    )
    delivered = answer_grounding(guarded.text, passages, question=q["question"]).grounded
    bucket["delivered"].append(1.0 if delivered else 0.0)
    verdicts[guarded.verdict] = verdicts.get(guarded.verdict, 0) + 1
    bucket["first_ms"].append(first or total)
    bucket["total_ms"].append(total)
    gold_ids = {c["document_id"] for c in plan.citations}
    keys = _doc_keys()
    bucket["cited_gold"].append(1.0 if q["gold"] in {keys.get(i) for i in gold_ids} else 0.0)
    return {
        "id": q["id"],
        "question": q["question"],
        "answer": answer,
        "grounded": grounding.grounded,
        "guard": guarded.verdict,
        "delivered": guarded.text,
        "unsupported": [
            {"claim": c.text, "missing": c.missing_words[:8], "numbers": c.missing_numbers}
            for c in grounding.claims
            if not c.grounded
        ],
    }


def _answers_summary(
    role: str,
    model: str,
    per_lang: dict[str, dict[str, list[float]]],
    verdicts: dict[str, int],
    examples: list[dict[str, Any]],
) -> dict[str, Any]:
    all_grounded = [v for b in per_lang.values() for v in b["grounded"]]
    return {
        "role": role,
        "model": model,
        "answers": len(all_grounded),
        # The model's own answers, and what the shopper is shown after the guard.
        "groundedness": _mean(all_grounded),
        "delivered_groundedness": _mean([v for b in per_lang.values() for v in b["delivered"]]),
        "guard_verdicts": verdicts,
        "by_language": {
            lang: {
                "answers": len(b["grounded"]),
                "groundedness": _mean(b["grounded"]),
                "delivered_groundedness": _mean(b["delivered"]),
                "cites_gold_document": _mean(b["cited_gold"]),
                "first_token_ms_p50": _pct(b["first_ms"], 50),
                "first_token_ms_p95": _pct(b["first_ms"], 95),
                "answer_ms_p50": _pct(b["total_ms"], 50),
            }
            for lang, b in sorted(per_lang.items())
        },
        "ungrounded_examples": [e for e in examples if not e["grounded"]][:10],
        "sample_answers": examples[:6],
    }


def _retrieval_print(retrieval: dict[str, Any]) -> None:
    for method in ("dense", "bm25", "hybrid"):
        for lang, m in retrieval[method].items():
            print(
                f"{method:6} {lang}: hit@1 {m['hit_at_1']:.3f} hit@3 {m['hit_at_3']:.3f} "
                f"MRR {m['mrr']:.3f} (n={m['questions']}); "
                f"answered {m['answered_rate_in_scope']}, "
                f"out-of-scope abstained "
                f"{m['abstain_rate_out_of_scope']}"
            )


def _answers_run(questions: list[dict[str, Any]], roles: str, sample_every: int) -> dict[str, Any]:
    answers: dict[str, Any] = {}
    for role in [r for r in roles.split(",") if r]:
        result = answers_evaluate(questions, role=role, sample_every=sample_every)
        answers[role] = result
        print(
            f"answers by {role} ({result['model']}): groundedness "
            f"{result['groundedness']} as the model wrote them, "
            f"{result['delivered_groundedness']} as delivered after the guard "
            f"{result['guard_verdicts']}, over {result['answers']} answers; "
            + "; ".join(
                f"{lang} first token p50 {m['first_token_ms_p50']} ms"
                for lang, m in result["by_language"].items()
            )
        )
    return answers


def _verdicts(
    retrieval: dict[str, Any], answers: dict[str, Any], chosen: str
) -> dict[str, dict[str, Any]]:
    hybrid = retrieval["hybrid"]
    verdicts = {
        f"hybrid_{metric}_{lang}": {
            "value": hybrid[lang][metric],
            "target": TARGETS[metric],
            "met": (hybrid[lang][metric] or 0) >= TARGETS[metric],
        }
        for lang in hybrid
        for metric in ("hit_at_3", "mrr")
    }
    if chosen in answers:
        # Judged on what shoppers are shown. The guard uses the same checker, so
        # this is high by construction; "model_groundedness" and the guard's
        # verdicts say how often the model's own answer went out unchanged.
        value = answers[chosen]["delivered_groundedness"]
        verdicts["groundedness"] = {
            "value": value,
            "target": TARGETS["groundedness"],
            "met": (value or 0) >= TARGETS["groundedness"],
            "role": chosen,
            "model_groundedness": answers[chosen]["groundedness"],
            "guard_verdicts": answers[chosen]["guard_verdicts"],
        }
    return verdicts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Evaluate retrieval (hit@1/3, MRR per method and language) and answer "
        "groundedness."
    )
    parser.add_argument("--roles", default="fast,fallback", help="model roles to compare")
    parser.add_argument("--sample-every", type=int, default=3, help="answer every n-th question")
    parser.add_argument("--no-answers", action="store_true", help="retrieval only")
    parser.add_argument("--output", default=str(ROOT / "bench" / "results" / "rag.json"))
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.conf import settings

    from knowledge.seed import knowledge_seed

    print(f"knowledge base: {knowledge_seed(ingest_now=True)}")
    questions = questions_load()
    retrieval = retrieval_evaluate(questions)
    _retrieval_print(retrieval)
    answers = {} if args.no_answers else _answers_run(questions, args.roles, args.sample_every)
    chosen = settings.TIERDESK_KB_ANSWER_ROLE
    verdicts = _verdicts(retrieval, answers, chosen)
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    existing = json.loads(output.read_text()) if output.exists() else {}
    existing["evaluation"] = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "questions": {
            lang: sum(1 for q in questions if q["language"] == lang and q["gold"])
            for lang in ("en", "zh")
        },
        "out_of_scope_questions": sum(1 for q in questions if not q["gold"]),
        "settings": {
            "top_k": settings.TIERDESK_KB_TOP_K,
            "candidates": settings.TIERDESK_KB_CANDIDATES,
            "min_similarity": settings.TIERDESK_KB_MIN_SIMILARITY,
            "min_keyword_coverage": settings.TIERDESK_KB_MIN_KEYWORD_COVERAGE,
            "context_tokens": settings.TIERDESK_KB_CONTEXT_TOKENS,
            "answer_role": chosen,
        },
        "retrieval": retrieval,
        "answers": answers,
        "targets": verdicts,
        "command": "make eval-rag",
    }
    output.write_text(json.dumps(existing, indent=2, ensure_ascii=False) + "\n")
    for name, verdict in verdicts.items():
        print(
            f"{name}: {verdict['value']} (target {verdict['target']}) "
            + ("met" if verdict["met"] else "MISSED")
        )
    print(f"wrote {output}")
    return 0


def _mean(values: list[float]) -> float | None:
    return round(float(np.mean(values)), 4) if values else None


def _pct(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 2) if values else None


if __name__ == "__main__":
    raise SystemExit(main())
