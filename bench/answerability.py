"""The answerability classifier on sets it was not fitted on (``python -m
bench.answerability``; docs/knowledge.md, "Answerability").

1. A throw-away SQLite database gets the demo knowledge base with the evaluation's
   added articles (bench/sets/answers/demo/articles.json), ingested, with the sections'
   generated questions and extractive answer cards as ``make eval-answers`` writes
   them (generated questions from the sections' structure only, as in the tests,
   unless ``TIERDESK_KB_QUESTIONS_ROLE`` is set). ``--fit`` first refits the
   seed model there (``manage.py fit_answerability``: the demo ``dev`` split and the
   probe sets, never ``test``).
2. On the demo ``test`` split: precision and recall per class over (question, section)
   pairs built as the fit builds them, and per question the decision L2 takes
   (answers from the right section, about the right article, unrelated when nothing
   answers).
3. The same on bench/sets/answers/lumen-beauty (a development shop never fitted on),
   with only that shop's articles in the knowledge base.

Writes bench/results/answerability.json with a flat ``figures`` object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SETS = ROOT / "bench" / "sets" / "answers"
RESULTS = ROOT / "bench" / "results" / "answerability.json"


def log(text: str) -> None:
    print(f"[answerability] {text}", file=sys.stderr, flush=True)


def articles_add(path: Path) -> None:
    from knowledge import services
    from knowledge.models import Document

    for article in json.loads(path.read_text(encoding="utf-8")):
        document = services.document_create(
            title=article["title"],
            text=article["text"],
            language=article["language"],
            source_format="markdown",
        )
        Document.objects.filter(pk=document.pk).update(seed_key=article["key"])


def knowledge_ready() -> dict[str, Any]:
    """Ingest every document, write its sections' generated questions (the classifier's
    question features read them) and approve the cards the entailment check backs."""
    from knowledge import cards, services
    from knowledge.models import AnswerCard, Document, SectionQuestion
    from knowledge.section_questions import section_questions_sync

    started = time.perf_counter()
    for document_id in Document.objects.values_list("pk", flat=True):
        services.document_ingest(document_id=document_id)
        section_questions_sync(document_id=document_id)
        cards.cards_sync(document_id=document_id)
    backed = [c.pk for c in AnswerCard.objects.all() if c.entailed]
    cards.card_review(card_ids=backed, status=AnswerCard.Status.APPROVED, user_id=None)
    return {
        "documents": Document.objects.count(),
        "cards": AnswerCard.objects.count(),
        "generated_questions": SectionQuestion.objects.count(),
        "seconds": round(time.perf_counter() - started, 1),
    }


def knowledge_clear() -> None:
    from knowledge.models import Document

    for document in Document.objects.all():
        document.delete()


def evaluate(rows: list[Any]) -> dict[str, Any]:
    """Pair-level precision/recall per class and the per-question decisions."""
    from knowledge import answerability
    from knowledge.answerability_fit import pairs_build, per_class, section_index

    pairs = pairs_build(rows)
    model = answerability.model_load()
    predicted = model.probabilities(pairs.rows).argmax(axis=1)
    sections = section_index()
    answered_right = about_right = abstained = 0
    answerable = [r for r in rows if r.answerable]
    for row in rows:
        decision = answerability.decide_for(row.question, row.language)
        chosen = decision.candidate.key if decision.candidate else None
        if not row.answerable:
            abstained += decision.label == "unrelated"
            continue
        gold = sections[(row.doc, row.section)]
        answered_right += decision.label == "answers" and chosen == gold
        about_right += decision.label != "unrelated" and chosen is not None and chosen[0] == gold[0]
    unanswerable = len(rows) - len(answerable)
    return {
        "pairs": pairs.report,
        "per_class": per_class(pairs.labels, predicted),
        "questions": {
            "answerable": len(answerable),
            "unanswerable": unanswerable,
            "answers_right_section": round(answered_right / max(1, len(answerable)), 3),
            "answers_or_about_right_article": round(about_right / max(1, len(answerable)), 3),
            "unrelated_on_unanswerable": round(abstained / max(1, unanswerable), 3),
        },
    }


def flat(prefix: str, section: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, figures in section["per_class"].items():
        out[f"{prefix}_{name}_precision"] = figures["precision"]
        out[f"{prefix}_{name}_recall"] = figures["recall"]
    for name, value in section["questions"].items():
        out[f"{prefix}_{name}"] = value
    return out


def seed_fit() -> None:
    """Fit the seed model (knowledge/seed_data/answerability.json) from the demo shop's
    seed sets: the ``dev`` split of its questions and the probe sets, never ``test``."""
    from knowledge import answerability
    from knowledge.answerability_fit import artifact_write, fit, labelled_load, pairs_build

    demo = SETS / "demo"
    files = [(demo / "questions.jsonl", {"dev"})]
    files += [(p, {p.stem}) for p in sorted(demo.glob("probe*.jsonl"))]
    rows = [row for file, splits in files for row in labelled_load(file, splits=splits)]
    payload = fit(pairs_build(rows), source="demo seed sets (dev split and probes)")
    artifact_write(payload, answerability.SEED_PATH)
    answerability.model_reset()
    log(f"seed model: {payload['meta']['questions']} questions, {payload['checksum'][:12]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", action="store_true", help="refit the seed model first")
    parser.add_argument("--output", default=str(RESULTS))
    args = parser.parse_args(argv)
    # Structure-made questions only, unless the caller names a role: a model call per
    # section of the demo knowledge base would make this run an hour on two cores.
    os.environ.setdefault("TIERDESK_KB_QUESTIONS_ROLE", "")

    from bench._tmpdb import django_on_temp_sqlite

    with django_on_temp_sqlite(shop=True):
        from knowledge import answerability
        from knowledge.answerability_fit import labelled_load
        from knowledge.seed import knowledge_seed

        knowledge_seed()
        articles_add(SETS / "demo" / "articles.json")
        log(f"demo knowledge base: {knowledge_ready()}")
        if args.fit:
            seed_fit()
        model = answerability.model_load()
        demo = evaluate(labelled_load(SETS / "demo" / "questions.jsonl", splits={"test"}))
        log(f"demo test: {demo['per_class']} {demo['questions']}")
        knowledge_clear()
        articles_add(SETS / "lumen-beauty" / "articles.json")
        log(f"lumen-beauty knowledge base: {knowledge_ready()}")
        lumen = evaluate(labelled_load(SETS / "lumen-beauty" / "questions.jsonl"))
        log(f"lumen-beauty: {lumen['per_class']} {lumen['questions']}")
    out = {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "model": {"checksum": model.checksum, **model.meta},
        "demo_test": demo,
        "lumen_beauty": lumen,
        "figures": flat("demo_test", demo) | flat("lumen", lumen),
    }
    Path(args.output).write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    log(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
