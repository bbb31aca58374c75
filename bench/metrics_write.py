"""What recording one reply's release metrics costs the thread that stores the reply
(issue #16): written at once (``TIERDESK_METRICS_FLUSH_S=0``: a locked read-modify-write
of the minute row per reply) against buffered (the default: a dict update, and the
buffer written afterwards), with 1 and 8 threads recording at once, as the chat's
database threads do under load. All replies land in the same minute row, as a busy
minute's do. Checks that every reply is in the rows after the flush.

No models, a few seconds: ``.venv/bin/python -m bench.metrics_write`` against the bench
database (``TIERDESK_BENCH_DATABASE_URL``; it only touches rows of tier ``Lbench``, and
deletes them).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import threading
import time
from typing import Any

from bench import l1

TIER = "Lbench"


def run(*, flush_s: float, threads: int, per_thread: int) -> dict[str, Any]:
    from django.conf import settings
    from django.db import connections

    from releases.metrics import ReplyFacts, metrics_flush, reply_record
    from releases.models import MetricMinute

    settings.TIERDESK_METRICS_FLUSH_S = flush_s
    MetricMinute.objects.filter(tier=TIER).delete()
    latencies: list[float] = []
    lock = threading.Lock()
    barrier = threading.Barrier(threads)

    def work() -> None:
        barrier.wait()
        mine = []
        for i in range(per_thread):
            facts = ReplyFacts(
                release_id=None,
                variant="stable",
                tier=TIER,
                status="complete",
                model="gemma3-270m-q4km",
                first_chunk_ms=100.0 + i % 300,
                prompt_tokens=100,
                completion_tokens=20,
                question="where is my order #W2611340?",
                text="Your order #W2611340 has shipped.",
                metadata={"guard": "passed", "model_planned": True},
            )
            started = time.perf_counter()
            reply_record(facts)
            mine.append((time.perf_counter() - started) * 1000)
        with lock:
            latencies.extend(mine)
        connections.close_all()

    workers = [threading.Thread(target=work) for _ in range(threads)]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    wall = time.perf_counter() - started
    metrics_flush()
    counted = sum(MetricMinute.objects.filter(tier=TIER).values_list("replies", flat=True))
    MetricMinute.objects.filter(tier=TIER).delete()
    return {
        "flush_s": flush_s,
        "threads": threads,
        "replies": threads * per_thread,
        "counted_in_rows": counted,
        "per_reply_ms_p50": round(statistics.median(latencies), 3),
        "per_reply_ms_p95": l1.pct(latencies, 95),
        "wall_s": round(wall, 3),
    }


def main() -> int:
    os.environ.update(l1.bench_env(warmup=False))
    sys.path.insert(0, str(l1.ROOT))
    import django

    django.setup()
    rows = [
        run(flush_s=flush_s, threads=threads, per_thread=200)
        for threads in (1, 8)
        for flush_s in (0.0, 5.0)
    ]
    for row in rows:
        print(json.dumps(row))
    print(json.dumps({"load1": round(os.getloadavg()[0], 2)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
