"""RAG benchmark: retrieval latency at 1k / 10k / 100k chunks, ingestion throughput, and
L2 first-chunk latency over a real WebSocket at 1 session. Writes bench/results/rag.json
(merging: ``make eval-rag`` owns the "evaluation" key) and prints the figures.

1. Retrieval: the demo articles are chunked and embedded for real; the index is then
   filled synthetically up to N chunks (vectors = real chunk vectors plus Gaussian noise,
   re-normalised; BM25 terms sampled from the real term distribution, per language), and
   every labelled question is searched with ``passages_retrieve`` against that snapshot.
   "search" excludes the query embedding (cached per question, as in production for
   repeated FAQ questions); "embed" is one uncached MiniLM pass, measured separately.
2. Ingestion: the demo knowledge base into a fresh PostgreSQL database with the real
   pipeline (parse, chunk, embed, fast-model summary, atomic swap), in this process.
3. L2 over WebSocket: Daphne as a subprocess (models warmed up), one shopper sends the
   labelled questions one at a time; first-chunk time is measured from send to the first
   ``chunk`` frame, for replies the router sent to L2.

Bounded: fixed counts, every wait has a timeout; 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "rag.json"
DB_URL = "postgres://postgres@127.0.0.1:5432/tierdesk_bench_rag"
REDIS_URL = "redis://127.0.0.1:6379/3"
TARGETS = {"retrieval_p95_ms_100k": 20.0, "l2_first_chunk_p95_ms_1_session": 400.0}


def log(text: str) -> None:
    print(f"[bench-rag {time.strftime('%H:%M:%S')}] {text}", flush=True)


def pct(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 2) if values else None


def setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.update(
        DATABASE_URL=os.environ.get("TIERDESK_BENCH_DATABASE_URL", DB_URL),
        REDIS_URL=os.environ.get("TIERDESK_BENCH_REDIS_URL", REDIS_URL),
        TIERDESK_WARMUP_ON_START="false",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        TIERDESK_LOG_LEVEL="WARNING",
    )
    import django

    django.setup()


# -- 1. retrieval latency ----------------------------------------------------------------------
def _real_parts() -> list[Any]:
    """The demo articles chunked and embedded for real, in memory (no database)."""
    from knowledge import embedding, ingest
    from knowledge import text as ktext
    from knowledge.index import DocPart, node_for
    from knowledge.seed import ARTICLES, STORE_POLICY, article_path

    parts = []
    next_id = 1
    for doc_index, (_key, language, title, relative, _origin) in enumerate(
        [*ARTICLES, STORE_POLICY]
    ):
        sections = ingest.document_sections(
            data=article_path(relative).read_bytes(), source_format="markdown"
        )
        drafts = ingest.sections_chunk(sections)
        vectors = embedding.embed_texts(
            [ingest.embedding_text(title=title, heading=d.heading, text=d.text) for d in drafts]
        )
        nodes = []
        for d in drafts:
            nodes.append(
                node_for(
                    chunk_id=next_id,
                    document_id=doc_index + 1,
                    title=title,
                    language=language,
                    anchor=d.anchor,
                    heading=d.heading,
                    text=d.text,
                )
            )
            next_id += 1
        tokens = [ktext.index_tokens(f"{title} {d.heading} {d.text}") for d in drafts]
        parts.append(DocPart(doc_index + 1, 1, title, language, "", None, nodes, vectors, tokens))
    return parts


def _synthetic_parts(real: list[Any], total: int, rng: random.Random) -> list[Any]:
    from knowledge.index import DocPart, node_for

    have = sum(len(p.nodes) for p in real)
    needed = max(0, total - have)
    pools: dict[str, list[str]] = {}
    for part in real:
        for toks in part.tokens:
            pools.setdefault(part.language, []).extend(toks)
    real_rows = [(p, i) for p in real for i in range(len(p.nodes))]
    nprng = np.random.default_rng(rng.randrange(1 << 30))
    parts = list(real)
    per_doc = 50
    chunk_id = 10_000_000
    for start in range(0, needed, per_doc):
        count = min(per_doc, needed - start)
        base = [real_rows[rng.randrange(len(real_rows))] for _ in range(count)]
        language = "zh" if rng.random() < 0.3 else "en"
        vectors = np.vstack([p.vectors[i] for p, i in base]) + nprng.normal(0, 0.06, (count, 384))
        vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
        pool = pools[language]
        tokens = [[pool[rng.randrange(len(pool))] for _ in range(40)] for _ in range(count)]
        doc_id = 1_000_000 + start // per_doc
        nodes = []
        for toks in tokens:
            chunk_id += 1
            nodes.append(
                node_for(
                    chunk_id=chunk_id,
                    document_id=doc_id,
                    title=f"Synthetic {doc_id}",
                    language=language,
                    anchor="s1",
                    heading="",
                    text=" ".join(toks),
                )
            )
        parts.append(
            DocPart(doc_id, 1, f"Synthetic {doc_id}", language, "", None, nodes, vectors, tokens)
        )
    return parts


def retrieval_bench(sizes: list[int], queries: int, seed: int) -> dict[str, Any]:
    from bench.rag_eval import questions_load
    from knowledge import embedding
    from knowledge.index import snapshot_build
    from knowledge.retrieval import passages_retrieve

    rng = random.Random(seed)
    questions = questions_load()
    real = _real_parts()
    # One uncached MiniLM pass per question (what a new question costs on top).
    embed_ms = []
    for q in questions[:100]:
        started = time.perf_counter()
        embedding.embed_texts([q["question"]])
        embed_ms.append((time.perf_counter() - started) * 1000)
    for q in questions:
        embedding.embed_query(q["question"])
    out: dict[str, Any] = {
        "query_embedding_ms": {"p50": pct(embed_ms, 50), "p95": pct(embed_ms, 95)},
        "sizes": {},
    }
    for size in sizes:
        parts = _synthetic_parts(real, size, rng)
        started = time.perf_counter()
        snap = snapshot_build(parts, version=size)
        build_s = time.perf_counter() - started
        picked = [questions[rng.randrange(len(questions))] for _ in range(queries)]
        for q in picked[:20]:  # warm caches (numpy, BM25 masks)
            passages_retrieve(question=q["question"], language=q["language"], snapshot=snap)
        search, total = [], []
        for q in picked:
            started = time.perf_counter()
            result = passages_retrieve(
                question=q["question"], language=q["language"], snapshot=snap
            )
            total.append((time.perf_counter() - started) * 1000)
            search.append(result.timings_ms["search"])
        out["sizes"][str(len(snap))] = {
            "chunks": len(snap),
            "queries": len(picked),
            "index_build_s": round(build_s, 2),
            "search_ms_p50": pct(search, 50),
            "search_ms_p95": pct(search, 95),
            "retrieve_ms_p50": pct(total, 50),
            "retrieve_ms_p95": pct(total, 95),
        }
        log(f"retrieval at {len(snap)} chunks: {out['sizes'][str(len(snap))]}")
        del snap, parts
    return out


# -- 2. ingestion ------------------------------------------------------------------------------
def database_reset(url: str) -> None:
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = urlunsplit(("postgresql", parts.netloc, "/postgres", "", ""))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def ingestion_bench() -> dict[str, Any]:
    from django.core.management import call_command

    from knowledge import services
    from knowledge.models import Document
    from knowledge.seed import knowledge_seed

    call_command("migrate", verbosity=0)
    from chatbot.orders.seed import catalogue_seed, shop_seed
    from routing.seed import intents_seed
    from routing.seed_templates import templates_seed

    shop_seed()
    catalogue_seed()
    intents_seed()
    templates_seed()
    knowledge_seed()
    from inference.registry import get_backend

    get_backend("fast").load()  # loading the model is start-up, not ingestion
    from knowledge import embedding

    embedding.get_model()
    chunks = 0
    started = time.perf_counter()
    for document_id in Document.objects.values_list("pk", flat=True):
        outcome = services.document_ingest(document_id=document_id)
        chunks += outcome.chunks
    seconds = time.perf_counter() - started
    docs = Document.objects.count()
    # The same documents again with the summary switched off: what embedding costs alone.
    from django.test import override_settings

    with override_settings(TIERDESK_KB_SUMMARY_ROLE=""):
        started = time.perf_counter()
        for document_id in Document.objects.values_list("pk", flat=True):
            services.document_ingest(document_id=document_id, force=True)
        no_summary_s = time.perf_counter() - started
    result = {
        "documents": docs,
        "chunks": chunks,
        "seconds": round(seconds, 2),
        "chunks_per_s": round(chunks / seconds, 2),
        "documents_per_s": round(docs / seconds, 3),
        "chunks_per_s_without_summary": round(chunks / no_summary_s, 2),
    }
    log(f"ingestion: {result}")
    return result


# -- 3. L2 first chunk over WebSocket --------------------------------------------------------
SESSION_MESSAGES = 10


async def ws_l2(port: int, questions: list[dict[str, Any]], warmup: int) -> dict[str, Any]:
    from websockets.asyncio.client import connect
    from websockets.typing import Origin

    first: list[float] = []
    tiers: dict[str, int] = {}
    errors: dict[str, int] = {}
    samples = []
    # A new session every SESSION_MESSAGES questions: one shopper asking 40 questions
    # back to back would (rightly) hit the per-session rate limit (20/minute).
    for start in range(0, len(questions), SESSION_MESSAGES):
        async with connect(
            f"ws://127.0.0.1:{port}/ws/chat/",
            origin=Origin(f"http://127.0.0.1:{port}"),
            proxy=None,
            open_timeout=30,
        ) as ws:
            hello = json.loads(await asyncio.wait_for(ws.recv(), 30))
            assert hello["type"] == "hello", hello
            for index in range(start, min(start + SESSION_MESSAGES, len(questions))):
                q = questions[index]
                sent = time.perf_counter()
                await ws.send(
                    json.dumps({"type": "message", "id": f"b{index}", "text": q["question"]})
                )
                first_ms = None
                while True:
                    frame = json.loads(await asyncio.wait_for(ws.recv(), 120))
                    if frame["type"] == "chunk" and first_ms is None:
                        first_ms = (time.perf_counter() - sent) * 1000
                    if frame["type"] in ("done", "error"):
                        break
                if index < warmup:
                    continue
                tier = frame.get("tier", frame["type"])
                tiers[tier] = tiers.get(tier, 0) + 1
                if frame["type"] == "error":
                    errors[frame.get("code", "?")] = errors.get(frame.get("code", "?"), 0) + 1
                answered = bool(frame.get("citations"))
                samples.append(
                    {
                        "tier": tier,
                        "first_ms": first_ms,
                        "answered": answered,
                        "server_first_chunk_ms": frame.get("first_chunk_ms"),
                    }
                )
                if tier == "L2" and first_ms is not None and answered:
                    first.append(first_ms)
    dont_know = [
        s["first_ms"] for s in samples if s["tier"] == "L2" and not s["answered"] and s["first_ms"]
    ]
    return {
        "sessions": 1,
        "messages": len(samples),
        "tiers": tiers,
        "error_codes": errors,
        "l2_answered": len(first),
        "first_chunk_ms_p50": pct(first, 50),
        "first_chunk_ms_p95": pct(first, 95),
        "first_chunk_ms_mean": round(float(np.mean(first)), 1) if first else None,
        "dont_know_first_chunk_ms_p50": pct(dont_know, 50),
    }


def websocket_bench(count: int, seed: int) -> dict[str, Any]:
    from bench.l1 import DaphneServer, free_port, redis_flush
    from bench.rag_eval import questions_load

    os.environ["TIERDESK_BENCH_DATABASE_URL"] = os.environ["DATABASE_URL"]
    os.environ["TIERDESK_BENCH_REDIS_URL"] = os.environ["REDIS_URL"]
    redis_flush(os.environ["REDIS_URL"])
    rng = random.Random(seed)
    questions = [q for q in questions_load() if q["gold"]]
    rng.shuffle(questions)
    port = free_port()
    server = DaphneServer(port)
    server.start()
    try:
        server.wait_ready()
        log(f"daphne ready in {server.ready_s:.1f}s on port {port}")
        result = asyncio.run(ws_l2(port, questions[: count + 2], warmup=2))
    finally:
        server.stop()
    log(f"L2 over WebSocket: {result}")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="RAG benchmark")
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--ws-messages", type=int, default=40)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--skip", default="", help="comma list of retrieval,ingestion,websocket")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    database_reset(os.environ.get("TIERDESK_BENCH_DATABASE_URL", DB_URL))
    setup_django()
    report: dict[str, Any] = {}
    if "ingestion" not in skip:
        report["ingestion"] = ingestion_bench()
    if "retrieval" not in skip:
        report["retrieval"] = retrieval_bench(
            [int(s) for s in args.sizes.split(",")], args.queries, args.seed
        )
    if "websocket" not in skip:
        report["l2_websocket"] = websocket_bench(args.ws_messages, args.seed)
    verdicts = {}
    sizes = report.get("retrieval", {}).get("sizes", {})
    big = max(sizes.values(), key=lambda s: s["chunks"]) if sizes else None
    if big:
        verdicts["retrieval_p95_ms_100k"] = {
            "value": big["search_ms_p95"],
            "target": TARGETS["retrieval_p95_ms_100k"],
            "met": big["search_ms_p95"] <= TARGETS["retrieval_p95_ms_100k"],
            "with_uncached_query_embedding_ms_p95": round(
                big["search_ms_p95"] + (report["retrieval"]["query_embedding_ms"]["p95"] or 0), 2
            ),
        }
    ws = report.get("l2_websocket")
    if ws and ws["first_chunk_ms_p95"] is not None:
        verdicts["l2_first_chunk_p95_ms_1_session"] = {
            "value": ws["first_chunk_ms_p95"],
            "target": TARGETS["l2_first_chunk_p95_ms_1_session"],
            "met": ws["first_chunk_ms_p95"] <= TARGETS["l2_first_chunk_p95_ms_1_session"],
        }
    from django.conf import settings

    existing = json.loads(args.out.read_text()) if args.out.exists() else {}
    existing.update(
        {
            "benchmark": {
                "when": datetime.now(UTC).isoformat(timespec="seconds"),
                "machine": {"nproc": os.cpu_count(), "loadavg_start": list(os.getloadavg())},
                "answer_role": settings.TIERDESK_KB_ANSWER_ROLE,
                "command": "make bench-rag",
                **report,
                "targets": verdicts,
            }
        }
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(existing, indent=2, ensure_ascii=False) + "\n")
    for name, verdict in verdicts.items():
        log(
            f"{name}: {verdict['value']} (target {verdict['target']}) "
            + ("met" if verdict["met"] else "MISSED")
        )
    log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
