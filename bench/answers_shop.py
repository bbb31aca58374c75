"""A new shop's answers (``make eval-answers SHOP=<name>``): the bot on a shop it has
never seen, with only that shop's help articles, asked in its shoppers' own words.

1. A fresh PostgreSQL database gets what ``manage.py setup_shop`` gives a new shop (the
   default intents, rules and reply templates), and nothing of the demo shop: no demo
   orders, products or knowledge base. The shop's articles
   (bench/sets/answers/<shop>/articles.json) are added through ``knowledge.services``
   as a support admin does, and ingested with the real pipeline.
2. Answer cards are drafted for every section. The run stands in for the admin's bulk
   action (``--cards``): by default it approves every draft the entailment check backs,
   as ``make eval-answers`` does on the demo shop; ``all`` approves every draft,
   ``none`` leaves them all as drafts.
3. Daphne runs on that database; every question is sent by a new shopper over a real
   WebSocket and graded as the demo run grades (``bench.answers.grade``): correct,
   contradicted, abstained or other, and *pointed* first when the server marked the
   reply as a hedged quote of a section. A pointed reply to an answerable question that
   cites the question's article counts as pointed to the right section, never as
   answered.

Every question of the set is asked (the sets' ``split`` field is reported, not
filtered). Writes the shop's section of bench/results/answers_newshop.json, with the
flat ``figures`` prefixed by the shop's name, beside the sections of earlier runs on
other shops. The development set is ``lumen-beauty``; ``harvest-basket`` is held out
for the final figure and is never tuned on.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from bench.answers import (
    ROOT,
    answers_run,
    daphne_serving,
    load_jsonl,
    log,
    models_configuration,
    pct,
    rate,
    setup_django,
    summarise,
)

SETS = ROOT / "bench" / "sets" / "answers"
RESULTS = ROOT / "bench" / "results" / "answers_newshop.json"
CARD_CHOICES = ("backed", "all", "none")


def shop_prepare(shop: str, cards_choice: str) -> dict[str, Any]:
    """A new shop's database with only its own articles; returns what was built and
    ``doc_keys`` (document id -> the article's key in the set)."""
    from django.core.management import call_command

    from bench.rag import database_reset
    from knowledge import cards, services
    from knowledge.models import AnswerCard, Document
    from knowledge.section_questions import section_questions_sync
    from routing.seed import intents_seed
    from routing.seed_templates import templates_seed

    database_reset(os.environ["DATABASE_URL"])
    call_command("migrate", verbosity=0)
    intents_seed()
    templates_seed()
    articles = json.loads((SETS / shop / "articles.json").read_text(encoding="utf-8"))
    doc_keys: dict[int, str] = {}
    for article in articles:
        document = services.document_create(
            title=article["title"],
            text=article["text"],
            language=article["language"],
            source_format="markdown",
        )
        doc_keys[document.pk] = article["key"]
    started = time.perf_counter()
    for document_id in doc_keys:
        services.document_ingest(document_id=document_id)
    ingest_s = time.perf_counter() - started
    started = time.perf_counter()
    for document_id in Document.objects.values_list("pk", flat=True):
        section_questions_sync(document_id=document_id)
    questions_s = time.perf_counter() - started
    started = time.perf_counter()
    for document_id in doc_keys:
        cards.cards_sync(document_id=document_id)
    cards_s = time.perf_counter() - started
    drafts = list(AnswerCard.objects.all())
    chosen = {
        "backed": [c.pk for c in drafts if c.entailed],
        "all": [c.pk for c in drafts],
        "none": [],
    }[cards_choice]
    if chosen:
        cards.card_review(card_ids=chosen, status=AnswerCard.Status.APPROVED, user_id=None)
    out: dict[str, Any] = {
        "documents": Document.objects.count(),
        "ingest_s": round(ingest_s, 1),
        "questions_s": round(questions_s, 1),
        "cards": len(drafts),
        "cards_approved": len(chosen),
        "cards_choice": cards_choice,
        "cards_draft_s": round(cards_s, 1),
    }
    log(f"{shop}: knowledge base ready: {out}")
    out["doc_keys"] = doc_keys
    return out


def pointed(question: dict[str, Any], row: dict[str, Any], doc_keys: dict[int, str]) -> bool:
    """The server marked the reply as a hedged quote (graded ``pointed``, never an
    answer), and it cites the article that holds the answer."""
    if row["grade"] != "pointed" or question["kind"] == "unanswerable":
        return False
    return any(doc_keys.get(d) == question["doc"] for d in row.get("cited_documents", []))


def shop_figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    answerable = [r for r in rows if r["kind"] != "unanswerable"]
    unanswerable = [r for r in rows if r["kind"] == "unanswerable"]
    l2_first = [r["first_ms"] for r in rows if r["tier"] == "L2" and r["first_ms"] is not None]

    def share(group: list[dict[str, Any]], test: Any) -> float | None:
        return rate(sum(bool(test(r)) for r in group), len(group))

    figures: dict[str, Any] = {
        "questions": len(rows),
        "answerable": len(answerable),
        "unanswerable": len(unanswerable),
        "correct_on_answerable": share(answerable, lambda r: r["grade"] == "correct"),
        "pointed_on_answerable": share(answerable, lambda r: r["pointed"]),
        "correct_or_pointed_on_answerable": share(
            answerable, lambda r: r["grade"] == "correct" or r["pointed"]
        ),
        "abstained_on_answerable": share(
            answerable, lambda r: r["grade"] == "abstained" and not r["pointed"]
        ),
        "contradicted": sum(r["grade"] == "contradicted" for r in rows),
        "pointed_quote_contradicting": sum(bool(r.get("quote_contradicting")) for r in rows),
        "pointed_on_unanswerable": share(unanswerable, lambda r: r["grade"] == "pointed"),
        "abstained_on_unanswerable": share(unanswerable, lambda r: r["grade"] == "abstained"),
        "l2_first_chunk_p50_ms": pct(l2_first, 50),
        "l2_first_chunk_p95_ms": pct(l2_first, 95),
    }
    for lang in ("en", "zh"):
        mine = [r for r in answerable if r["lang"] == lang]
        figures[f"correct_on_answerable_{lang}"] = share(mine, lambda r: r["grade"] == "correct")
        unans = [r for r in unanswerable if r["lang"] == lang]
        figures[f"abstained_on_unanswerable_{lang}"] = share(
            unans, lambda r: r["grade"] == "abstained"
        )
    return figures


def results_merge(shop: str, section: dict[str, Any]) -> dict[str, Any]:
    """This shop's section beside the other shops' sections of earlier runs."""
    try:
        results = json.loads(RESULTS.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        results = {}
    shops = results.get("shops", {})
    shops[shop] = section
    figures = {
        f"{name}_{key}": value
        for name, part in sorted(shops.items())
        for key, value in part["figures"].items()
    }
    return {"benchmark": "answers_newshop", "figures": figures, "shops": shops}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shop", required=True, help="a folder of bench/sets/answers/")
    parser.add_argument("--cards", choices=CARD_CHOICES, default="backed")
    parser.add_argument("--limit", type=int, default=0, help="ask only the first N questions")
    args = parser.parse_args(argv)
    if not (SETS / args.shop / "articles.json").is_file():
        parser.error(f"no articles.json in {SETS / args.shop}")
    setup_django()
    from bench import l1

    l1.MODELS["mode"] = os.environ["TIERDESK_MODELS"]
    started = time.perf_counter()
    kb = shop_prepare(args.shop, args.cards)
    doc_keys = kb.pop("doc_keys")
    questions = load_jsonl(SETS / args.shop / "questions.jsonl")
    if args.limit:
        questions = questions[: args.limit]
    with daphne_serving(len(questions)) as port:
        rows = answers_run(port, questions)
    by_id = {q["id"]: q for q in questions}
    for row in rows:
        row["pointed"] = pointed(by_id[row["id"]], row, doc_keys)
    figures = shop_figures(rows)
    figures["seconds"] = round(time.perf_counter() - started, 1)
    section = {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "make eval-answers SHOP="
        + args.shop
        + (f" (--cards {args.cards})" if args.cards != "backed" else "")
        + (f" (partial: --limit {args.limit})" if args.limit else ""),
        "configuration": models_configuration(),
        "knowledge_base": kb,
        "figures": figures,
        "by_language_and_tier": summarise(rows),
        "tiers": dict(Counter(r["tier"] for r in rows)),
        "grades": dict(Counter(r["grade"] + ("+pointed" if r["pointed"] else "") for r in rows)),
        "rows": rows,
    }
    if args.limit:
        out = ROOT / "var" / f"answers-{args.shop}-partial.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(section, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    else:
        merged = results_merge(args.shop, section)
        RESULTS.write_text(json.dumps(merged, indent=1, ensure_ascii=False) + "\n", "utf-8")
    log(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
