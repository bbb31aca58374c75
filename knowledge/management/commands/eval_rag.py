"""``manage.py eval_rag``: retrieval and answer evaluation (``make eval-rag``).

Seeds and ingests the demo knowledge base in the current database if needed, runs
``knowledge.evaluation`` and merges the figures into bench/results/rag.json under
"evaluation" (the benchmark owns the other keys).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

TARGETS = {"hit_at_3": 0.91, "mrr": 0.80, "groundedness": 0.95}


class Command(BaseCommand):
    help = "Evaluate retrieval (hit@1/3, MRR per method and language) and answer groundedness."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--roles", default="fast,fallback", help="model roles to compare")
        parser.add_argument(
            "--sample-every", type=int, default=3, help="answer every n-th question"
        )
        parser.add_argument("--no-answers", action="store_true", help="retrieval only")
        parser.add_argument(
            "--output", default=str(Path(settings.BASE_DIR) / "bench" / "results" / "rag.json")
        )

    def handle(self, *args: Any, **options: Any) -> None:
        from knowledge.evaluation import answers_evaluate, questions_load, retrieval_evaluate
        from knowledge.seed import knowledge_seed

        self.stdout.write(f"knowledge base: {knowledge_seed(ingest_now=True)}")
        questions = questions_load()
        retrieval = retrieval_evaluate(questions)
        for method in ("dense", "bm25", "hybrid"):
            for lang, m in retrieval[method].items():
                self.stdout.write(
                    f"{method:6} {lang}: hit@1 {m['hit_at_1']:.3f} hit@3 {m['hit_at_3']:.3f} "
                    f"MRR {m['mrr']:.3f} (n={m['questions']}); "
                    f"answered {m['answered_rate_in_scope']}, "
                    f"out-of-scope abstained "
                    f"{m['abstain_rate_out_of_scope']}"
                )
        answers: dict[str, Any] = {}
        if not options["no_answers"]:
            for role in [r for r in options["roles"].split(",") if r]:
                result = answers_evaluate(
                    questions, role=role, sample_every=options["sample_every"]
                )
                answers[role] = result
                self.stdout.write(
                    f"answers by {role} ({result['model']}): groundedness "
                    f"{result['groundedness']} as the model wrote them, "
                    f"{result['delivered_groundedness']} as delivered after the guard "
                    f"{result['guard_verdicts']}, over {result['answers']} answers; "
                    + "; ".join(
                        f"{lang} first token p50 {m['first_token_ms_p50']} ms"
                        for lang, m in result["by_language"].items()
                    )
                )
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
        chosen = settings.TIERDESK_KB_ANSWER_ROLE
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
        output = Path(options["output"])
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
            self.stdout.write(
                f"{name}: {verdict['value']} (target {verdict['target']}) "
                + ("met" if verdict["met"] else "MISSED")
            )
        self.stdout.write(f"wrote {output}")
