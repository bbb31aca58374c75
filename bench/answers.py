"""Truthfulness evaluation (``make eval-answers``): are the bot's answers backed by the
shop's own knowledge base, and does it abstain when they can't be?

1. A fresh PostgreSQL database gets the demo shop, its intents and templates and the
   demo knowledge base, ingested in this process with the real pipeline; then the
   evaluation adds its own articles (bench/sets/answers/demo/articles.json) through
   ``knowledge.services``, as the admin does.
2. Answer cards are drafted for every section (``knowledge.cards.cards_sync``, with
   ``--card-role``). The evaluation stands in for the support admin: it approves every
   draft the entailment check backs and leaves the rest as drafts. Nobody read them,
   so the figure is what a shop gets if it approves what the checker passes.
3. Daphne runs as a subprocess on that database; every question is sent by a new
   shopper over a real WebSocket. The reply the shopper saw (chunks, replaces) and its
   ``done`` frame (tier, guard, citations) are graded against the question's key:
   correct (every required fact present), contradicted (a forbidden phrase present),
   abstained (the bot said it doesn't know / offered a person), or other; a reply the
   server marks as *pointed* (a hedged quote of a section, docs/knowledge.md) is graded
   ``pointed`` before anything else, never correct, and its quote holding a forbidden
   phrase is counted apart (``pointed_quote_contradicting``).
4. The entailment checker alone, on its own test set (bench/sets/entailment/demo).

Figures are reported on the ``test`` split; the thresholds (card similarity, checker
rules) were tuned on ``dev`` only. Bounded: fixed counts, every wait has a timeout,
127.0.0.1 only. Writes bench/results/answers.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "answers.json"
ANSWERS = ROOT / "bench" / "sets" / "answers" / "demo"
ENTAILMENT = ROOT / "bench" / "sets" / "entailment" / "demo"
DB_URL = "postgres://postgres@127.0.0.1:5432/tierdesk_bench_answers"
REDIS_URL = "redis://127.0.0.1:6379/4"
TARGETS = {
    "contradicted_delivered": 0,
    "l3_own_orders_invented_facts": 0,
    "correct_on_answerable": 0.90,
    "abstained_on_unanswerable": 0.90,
    "l2_card_first_chunk_p95_ms": 400.0,
}
# What a "don't know" reply says (knowledge.answer.DONT_KNOW, the L3 abstention and the
# handoff offers), lower-cased. The clarify menu ("Sorry, I'm not sure I understood.
# I can help with...") is no abstention: it neither says the shop doesn't know nor
# offers a person, so "not sure" is not in the list (until 2026-12-01 it was, which
# counted the English clarify menu, and not the Chinese one, as abstaining).
ABSTAIN = re.compile(
    r"couldn't find|could not find|don't know|do not know|won't guess|can't answer|"
    r"a person|没有找到|不知道|不想乱猜|人工|无法回答",
)


def log(text: str) -> None:
    print(f"[eval-answers {time.strftime('%H:%M:%S')}] {text}", flush=True)


def pct(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 1) if values else None


def setup_django() -> None:
    os.environ.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DATABASE_URL=os.environ.get("TIERDESK_BENCH_DATABASE_URL", DB_URL),
        REDIS_URL=os.environ.get("TIERDESK_BENCH_REDIS_URL", REDIS_URL),
        TIERDESK_BENCH_DATABASE_URL=os.environ.get("TIERDESK_BENCH_DATABASE_URL", DB_URL),
        TIERDESK_BENCH_REDIS_URL=os.environ.get("TIERDESK_BENCH_REDIS_URL", REDIS_URL),
        TIERDESK_WARMUP_ON_START="false",
        # The models run inside Daphne (and this process, for summaries and cards), as
        # in every run of this evaluation so far: it measures answers, not the server.
        TIERDESK_MODELS=os.environ.get("TIERDESK_MODELS", "inprocess"),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        TIERDESK_LOG_LEVEL="WARNING",
        # Every question comes from one IP, one after another: on a quick day the run
        # passed the per-IP limit (120 a minute) and the last 78 questions got
        # ``rate_limited`` error frames, graded as wrong answers (17:49 UTC,
        # 2026-12-02). The limits have their own tests; this run measures answers.
        TIERDESK_RATE_LIMITS="false",
    )
    import django

    django.setup()


def load_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


# -- 1-2. the knowledge base and its cards ---------------------------------------------------
def knowledge_reuse() -> dict[str, Any] | None:
    """The knowledge base an earlier run of this evaluation left in its database (for
    the dev loop, ``--reuse-kb``): None when there is none to reuse."""
    from django.db import DatabaseError

    from knowledge.models import AnswerCard, Document

    try:
        documents = Document.objects.count()
        cards = AnswerCard.objects.count()
    except DatabaseError:
        return None
    if not documents or not cards:
        return None
    out = {"documents": documents, "cards": cards, "reused": True}
    log(f"knowledge base reused: {out}")
    return out


def knowledge_prepare(card_role: str) -> dict[str, Any]:
    from django.core.management import call_command
    from django.test import override_settings

    from bench.rag import database_reset
    from chatbot.orders.seed import catalogue_seed, shop_seed
    from knowledge import cards, services
    from knowledge.models import AnswerCard, Document
    from knowledge.section_questions import section_questions_sync
    from knowledge.seed import knowledge_seed
    from routing.seed import intents_seed
    from routing.seed_templates import templates_seed

    database_reset(os.environ["DATABASE_URL"])
    call_command("migrate", verbosity=0)
    shop_seed()
    catalogue_seed()
    intents_seed()
    templates_seed()
    knowledge_seed()
    articles = json.loads((ANSWERS / "articles.json").read_text(encoding="utf-8"))
    for article in articles:
        # The admin's path: a new document saved through the service, then ingested.
        document = services.document_create(
            title=article["title"],
            text=article["text"],
            language=article["language"],
            source_format="markdown",
        )
        Document.objects.filter(pk=document.pk).update(seed_key=article["key"])
    started = time.perf_counter()
    for document_id in Document.objects.values_list("pk", flat=True):
        services.document_ingest(document_id=document_id)
    ingest_s = time.perf_counter() - started
    started = time.perf_counter()
    for document_id in Document.objects.values_list("pk", flat=True):
        section_questions_sync(document_id=document_id)
    questions_s = time.perf_counter() - started
    started = time.perf_counter()
    with override_settings(TIERDESK_KB_CARD_ROLE=card_role):
        for document_id in Document.objects.values_list("pk", flat=True):
            cards.cards_sync(document_id=document_id)
    cards_s = time.perf_counter() - started
    backed = [c.pk for c in AnswerCard.objects.all() if c.entailed]
    cards.card_review(card_ids=backed, status=AnswerCard.Status.APPROVED, user_id=None)
    total = AnswerCard.objects.count()
    out = {
        "documents": Document.objects.count(),
        "eval_articles_added": len(articles),
        "ingest_s": round(ingest_s, 1),
        "questions_s": round(questions_s, 1),
        "cards": total,
        "cards_approved": len(backed),
        "cards_left_draft_not_backed": total - len(backed),
        "card_role": card_role or "extractive",
        "cards_draft_s": round(cards_s, 1),
        "cards_by": dict(
            Counter(
                c.split(" ")[0] for c in AnswerCard.objects.values_list("drafted_by", flat=True)
            )
        ),
    }
    log(f"knowledge base ready: {out}")
    return out


# -- 3. every question over a WebSocket --------------------------------------------------------
async def ask(port: int, question: str, qid: str, *, token: str = "") -> dict[str, Any]:
    from websockets.asyncio.client import connect
    from websockets.typing import Origin

    async with connect(
        f"ws://127.0.0.1:{port}/ws/chat/",
        origin=Origin(f"http://127.0.0.1:{port}"),
        proxy=None,
        open_timeout=30,
    ) as ws:
        hello = json.loads(await asyncio.wait_for(ws.recv(), 30))
        assert hello["type"] == "hello", hello
        if token:
            # The shop's signed token: the shopper is signed in (docs/identity.md).
            await ws.send(json.dumps({"type": "identify", "token": token}))
            while json.loads(await asyncio.wait_for(ws.recv(), 30))["type"] != "identified":
                pass
        sent = time.perf_counter()
        await ws.send(json.dumps({"type": "message", "id": qid, "text": question}))
        shown = ""
        first_ms: float | None = None
        replaced = False
        while True:
            frame = json.loads(await asyncio.wait_for(ws.recv(), 180))
            kind = frame["type"]
            if kind == "chunk":
                if first_ms is None:
                    first_ms = (time.perf_counter() - sent) * 1000
                shown += frame.get("text", "")
            elif kind == "replace":
                shown = frame.get("text", "")
                replaced = True
            elif kind in ("done", "error"):
                break
        return {"text": shown, "first_ms": first_ms, "replaced": replaced, "done": frame}


def grade(q: dict[str, Any], reply: dict[str, Any]) -> str:
    """correct / contradicted / abstained / other, and ``pointed`` first: a reply the
    server marked as a hedged quote of a section (``done.pointed``) is no answer, so it
    is never correct; nor does the section's own wording count as a contradiction the
    bot asserted (a rule quoted with all its branches names the other branches' values;
    ``quote_contradicting`` counts those apart)."""
    if reply["done"].get("pointed"):
        return "pointed"
    text = reply["text"].lower()
    if any(bad.lower() in text for bad in q.get("contradict", [])):
        return "contradicted"
    if all(any(form.lower() in text for form in group) for group in q.get("expect", [])) and q.get(
        "expect"
    ):
        return "correct"
    actions = reply["done"].get("actions") or []
    if ABSTAIN.search(text) or "offer:human" in actions:
        return "abstained"
    return "other"


def quote_contradicting(q: dict[str, Any], reply: dict[str, Any]) -> bool:
    """A pointed reply whose quote holds a phrase the question's key forbids."""
    text = reply["text"].lower()
    return bool(reply["done"].get("pointed")) and any(
        bad.lower() in text for bad in q.get("contradict", [])
    )


@contextmanager
def daphne_serving(questions: int) -> Iterator[int]:
    """Daphne on this run's database, Redis flushed first: yields its port."""
    from bench.l1 import DaphneServer, free_port, redis_flush

    redis_flush(os.environ["REDIS_URL"])
    port = free_port()
    server = DaphneServer(port)
    server.start()
    try:
        server.wait_ready()
        log(f"daphne ready in {server.ready_s:.1f}s; asking {questions} questions")
        yield port
    finally:
        server.stop()


def answers_run(port: int, questions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []

    async def run() -> None:
        for i, q in enumerate(questions):
            reply = await ask(port, q["question"], f"e{i}")
            done = reply["done"]
            citations = done.get("citations") or []
            row = {
                "id": q["id"],
                "lang": q["lang"],
                "split": q["split"],
                "kind": q["kind"],
                "trap": q.get("trap", "none"),
                "question": q["question"],
                "answer": reply["text"],
                "tier": done.get("tier", done.get("type")),
                "intent": done.get("intent"),
                "guard": done.get("guard"),
                "card": any(c.get("card_id") for c in citations),
                "cited_documents": [c.get("document_id") for c in citations],
                "first_ms": reply["first_ms"],
                "replaced": reply["replaced"],
            }
            if done.get("type") == "error":
                # An error frame instead of a reply: its code and message, to say why.
                row["error"] = {"code": done.get("code"), "message": done.get("message")}
            row["grade"] = grade(q, reply)
            row["pointed_why"] = (done.get("pointed") or {}).get("why")
            row["quote_contradicting"] = quote_contradicting(q, reply)
            rows.append(row)
            if (i + 1) % 25 == 0:
                log(f"{i + 1}/{len(questions)} asked")

    asyncio.run(run())
    return rows


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[(r["lang"], r["tier"])].append(r)
        by[(r["lang"], "all")].append(r)
        by[("all", "all")].append(r)
    for (lang, tier), group in sorted(by.items()):
        answerable = [r for r in group if r["kind"] != "unanswerable"]
        unanswerable = [r for r in group if r["kind"] == "unanswerable"]
        traps = [r for r in group if r["kind"] == "trap"]
        out[f"{lang}/{tier}"] = {
            "questions": len(group),
            "answerable": len(answerable),
            "correct": sum(r["grade"] == "correct" for r in answerable),
            "contradicted": sum(r["grade"] == "contradicted" for r in group),
            "abstained_on_answerable": sum(r["grade"] == "abstained" for r in answerable),
            "other_on_answerable": sum(r["grade"] == "other" for r in answerable),
            "unanswerable": len(unanswerable),
            "abstained_on_unanswerable": sum(r["grade"] == "abstained" for r in unanswerable),
            "pointed_on_answerable": sum(r["grade"] == "pointed" for r in answerable),
            "pointed_on_unanswerable": sum(r["grade"] == "pointed" for r in unanswerable),
            "traps": len(traps),
            "traps_correct": sum(r["grade"] == "correct" for r in traps),
        }
    return out


def rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


# -- 4. the checker alone ------------------------------------------------------------------------
def checker_evaluate(split: str) -> dict[str, Any]:
    from knowledge.entail import label_pair

    pairs = [p for p in load_jsonl(ENTAILMENT / "pairs.jsonl") if p["split"] == split]
    out: dict[str, Any] = {}
    for lang in ("en", "zh", "all"):
        subset = [p for p in pairs if lang == "all" or p["lang"] == lang]
        predicted = [label_pair(p["premise"], p["hypothesis"]) for p in subset]
        # "Released" = the checker says entailed. Precision: of released, truly entailed.
        released = [p for p, y in zip(subset, predicted, strict=True) if y == "entailed"]
        truly = [p for p in subset if p["label"] == "entailed"]
        contradictions = [p for p in subset if p["label"] == "contradicted"]
        caught = [
            p
            for p, y in zip(subset, predicted, strict=True)
            if p["label"] == "contradicted" and y != "entailed"
        ]
        good = sum(p["label"] == "entailed" for p in released)
        out[lang] = {
            "pairs": len(subset),
            "release_precision": rate(good, len(released)),
            "release_recall": rate(good, len(truly)),
            "contradictions_blocked": rate(len(caught), len(contradictions)),
            "contradictions_released": len(contradictions) - len(caught),
            "by_kind_released_wrongly": dict(
                Counter(
                    p["kind"]
                    for p, y in zip(subset, predicted, strict=True)
                    if y == "entailed" and p["label"] != "entailed"
                )
            ),
        }
    return out


# -- 5. L3 about the shopper's own orders ----------------------------------------------------
OWN_ORDER_QUESTIONS = [
    (
        "en",
        "Compare my last two orders and tell me which one cost more, and why my last "
        "refund took so long",
    ),
    (
        "en",
        "Summarise everything I ordered from you and when each order should arrive, "
        "and suggest a backpack for hiking",
    ),
    (
        "en",
        "I'm confused about my orders: which ones are already delivered, how much did I "
        "spend in total, and can I still cancel any of them?",
    ),
    ("zh", "帮我比较一下我最近的两个订单，哪个更贵？我上次的退款为什么这么慢？"),
]
_FACT = re.compile(r"#?W\d{5,}|\$\s?\d[\d,]*(?:\.\d+)?|\d[\d,]*\.\d{2}")


def _allowed_facts(customer_id: str) -> set[str]:
    """Every order id, amount and price the shopper's own orders, the catalogue, the
    shipping options and the knowledge base contain: an answer's fact outside it is
    invented."""
    from chatbot.orders.backends import get_order_service
    from knowledge.models import Chunk

    service = get_order_service()
    allowed: set[str] = set()
    for order in service.orders_for_customer(customer_id=customer_id):
        allowed.add(order.order_id.lstrip("#"))
        allowed.add(f"{order.total:.2f}")
        allowed.update(f"{r:.2f}" for r in order.refunds)
        allowed.update(f"{item.price:.2f}" for item in order.items)
    from shop.catalogue import catalogue_products

    for product in catalogue_products():
        allowed.update(f"{variant.price:.2f}" for variant in product.variants)
    for option in service.shipping_options():
        allowed.add(f"{option.price:.2f}")
    for text in Chunk.objects.values_list("text", flat=True):
        allowed.update(_norm_fact(m) for m in _FACT.findall(text))
    return allowed


def _norm_fact(raw: str) -> str:
    raw = raw.replace("$", "").replace(",", "").replace(" ", "").lstrip("#")
    if raw.upper().startswith("W"):
        return "W" + raw[1:]
    try:
        return f"{float(raw):.2f}"
    except ValueError:
        return raw


def own_orders_run(port: int, shoppers: int) -> dict[str, Any]:
    """Signed-in shoppers ask large-tier questions about their own orders; every order
    id and amount in what they were shown must be theirs (or a catalogue/KB figure)."""
    from chatbot.orders.identity import shopper_token_issue
    from chatbot.orders.models import Customer, Order

    with_orders = list(
        Customer.objects.filter(pk__in=Order.objects.values("customer_id")).order_by("customer_id")[
            :shoppers
        ]
    )
    rows: list[dict[str, Any]] = []

    async def run() -> None:
        for i, customer in enumerate(with_orders):
            lang, question = OWN_ORDER_QUESTIONS[i % len(OWN_ORDER_QUESTIONS)]
            token = shopper_token_issue(customer_id=customer.customer_id)
            reply = await ask(port, question, f"o{i}", token=token)
            allowed = await asyncio.to_thread(_allowed_facts, customer.customer_id)
            facts = [_norm_fact(m) for m in _FACT.findall(reply["text"])]
            invented = [f for f in facts if f not in allowed]
            rows.append(
                {
                    "customer": customer.customer_id,
                    "lang": lang,
                    "question": question,
                    "tier": reply["done"].get("tier"),
                    "guard": reply["done"].get("guard"),
                    "answer": reply["text"],
                    "facts": facts,
                    "invented": invented,
                }
            )

    asyncio.run(run())
    return {
        "shoppers": len(rows),
        "by_tier": dict(Counter(r["tier"] for r in rows)),
        "facts_stated": sum(len(r["facts"]) for r in rows),
        "invented_order_facts": sum(len(r["invented"]) for r in rows),
        "rows": rows,
    }


def models_configuration() -> dict[str, Any]:
    from inference.registry import resolve_role
    from knowledge.judge import judge_role

    return {"judge_role": judge_role(), "l3_served_by": resolve_role("large")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--card-role", default="", help='model role drafting cards ("": extractive)'
    )
    parser.add_argument("--limit", type=int, default=0, help="ask only the first N questions")
    parser.add_argument("--split", default="", help="ask only this split (dev/test)")
    parser.add_argument("--ids", default="", help="ask only these question ids (comma-separated)")
    parser.add_argument(
        "--questions",
        default="",
        help="ask the questions of this JSONL file instead (same fields; e.g. the tuned-on "
        "probe set bench/sets/answers/demo/probe.jsonl, split 'probe')",
    )
    parser.add_argument(
        "--own-orders", type=int, default=20, help="signed-in shoppers asking L3 about their orders"
    )
    parser.add_argument(
        "--reuse-kb",
        action="store_true",
        help="keep the knowledge base and cards an earlier run left in the database (dev loop: "
        "only for changes to answering, not to ingestion or cards)",
    )
    parser.add_argument(
        "--out",
        default="",
        help="where the results go (default: bench/results/answers.json for a full run, "
        "var/answers-partial.json when --split, --limit, --ids or --reuse-kb narrow it)",
    )
    args = parser.parse_args(argv)
    partial = bool(args.split or args.limit or args.ids or args.reuse_kb or args.questions)
    # A narrowed run never overwrites the published figures.
    out_path = (
        Path(args.out)
        if args.out
        else (ROOT / "var" / "answers-partial.json" if partial else RESULTS)
    )
    setup_django()
    from bench import l1

    l1.MODELS["mode"] = os.environ["TIERDESK_MODELS"]

    started = time.perf_counter()
    checker = {"test": checker_evaluate("test"), "dev": checker_evaluate("dev")}
    log(f"checker (test split): {checker['test']['all']}")
    kb = (knowledge_reuse() if args.reuse_kb else None) or knowledge_prepare(args.card_role)
    questions = load_jsonl(Path(args.questions) if args.questions else ANSWERS / "questions.jsonl")
    if args.split:
        questions = [q for q in questions if q["split"] == args.split]
    if args.ids:
        wanted = set(args.ids.split(","))
        questions = [q for q in questions if q["id"] in wanted]
    if args.limit:
        questions = questions[: args.limit]
    with daphne_serving(len(questions)) as port:
        rows = answers_run(port, questions)
        try:
            own = (
                own_orders_run(port, args.own_orders)
                if args.own_orders
                else {"shoppers": 0, "facts_stated": None, "invented_order_facts": None, "rows": []}
            )
        except Exception as exc:  # the main figures must survive a fault in this part
            log(f"L3 own orders failed: {exc!r}")
            own = {"error": repr(exc), "shoppers": 0, "facts_stated": None}
            own["invented_order_facts"] = None
        log(f"L3 own orders: {own['invented_order_facts']} invented of {own['facts_stated']}")

    test = [r for r in rows if r["split"] == "test"]
    dev = [r for r in rows if r["split"] == "dev"]
    answerable = [r for r in test if r["kind"] != "unanswerable"]
    unanswerable = [r for r in test if r["kind"] == "unanswerable"]
    l2 = [r for r in rows if r["tier"] == "L2"]
    card_first = [r["first_ms"] for r in l2 if r["card"] and r["first_ms"] is not None]
    generated_first = [r["first_ms"] for r in l2 if not r["card"] and r["first_ms"] is not None]
    figures = {
        "questions": len(rows),
        "questions_test": len(test),
        "contradicted_delivered": sum(r["grade"] == "contradicted" for r in rows),
        "contradicted_delivered_test": sum(r["grade"] == "contradicted" for r in test),
        # Pointed replies (a hedged quote of a section, never counted as answered) and
        # those whose quote holds a phrase the key forbids (the rule's other branches).
        "pointed_on_answerable_test": rate(
            sum(r["grade"] == "pointed" for r in answerable), len(answerable)
        ),
        "pointed_on_unanswerable_test": rate(
            sum(r["grade"] == "pointed" for r in unanswerable), len(unanswerable)
        ),
        "pointed_quote_contradicting": sum(bool(r.get("quote_contradicting")) for r in rows),
        "correct_on_answerable_test": rate(
            sum(r["grade"] == "correct" for r in answerable), len(answerable)
        ),
        "abstained_on_unanswerable_test": rate(
            sum(r["grade"] == "abstained" for r in unanswerable), len(unanswerable)
        ),
        **{
            f"{name}_test_{lang}": rate(
                sum(r["grade"] == grade for r in group if r["lang"] == lang),
                sum(r["lang"] == lang for r in group),
            )
            for lang in ("en", "zh")
            for name, grade, group in (
                ("correct_on_answerable", "correct", answerable),
                ("abstained_on_unanswerable", "abstained", unanswerable),
            )
        },
        "correct_on_answerable_dev": rate(
            sum(r["grade"] == "correct" for r in dev if r["kind"] != "unanswerable"),
            sum(r["kind"] != "unanswerable" for r in dev),
        ),
        "abstained_on_unanswerable_dev": rate(
            sum(r["grade"] == "abstained" for r in dev if r["kind"] == "unanswerable"),
            sum(r["kind"] == "unanswerable" for r in dev),
        ),
        "l2_share_from_approved_cards": rate(sum(r["card"] for r in l2), len(l2)),
        "l2_card_first_chunk_p50_ms": pct(card_first, 50),
        "l2_card_first_chunk_p95_ms": pct(card_first, 95),
        "l2_generated_first_chunk_p50_ms": pct(generated_first, 50),
        "l2_generated_first_chunk_p95_ms": pct(generated_first, 95),
        "checker_release_precision_test": checker["test"]["all"]["release_precision"],
        "checker_release_recall_test": checker["test"]["all"]["release_recall"],
        "checker_contradictions_blocked_test": checker["test"]["all"]["contradictions_blocked"],
        "l3_own_orders_questions": own["shoppers"],
        "l3_own_orders_facts_stated": own["facts_stated"],
        "l3_own_orders_invented_facts": own["invented_order_facts"],
        "seconds": round(time.perf_counter() - started, 1),
    }
    result = {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "make eval-answers"
        + ("" if not partial else " (partial: " + " ".join(argv or sys.argv[1:]) + ")"),
        # Which models answered: the judge runs only with the optional 1.5B (or a remote
        # API) behind its role, and that model then serves L3 too.
        "configuration": models_configuration(),
        "figures": figures,
        "targets": TARGETS,
        "knowledge_base": kb,
        "by_language_and_tier_test": summarise(test),
        "by_language_and_tier_all": summarise(rows),
        "checker": checker,
        "tiers": dict(Counter(r["tier"] for r in rows)),
        "l3_own_orders": own,
        "rows": rows,
    }
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    log(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
