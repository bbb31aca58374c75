"""Bot-check cost (make bench-bot): server-side verification time per message.

    .venv/bin/python -m bench.bot [--messages 3000]   # writes bench/results/bot.json

What is timed is what the consumer adds per message on the event loop: parsing the
``bot`` field (inside frame_parse, measured as the difference to the same frame
without it) and ``BotSession.check`` (digest over nonce, sequence, features and text;
the plausibility score; the policy). The inputs are real: feature vectors and
fingerprints from the committed botcheck.wasm on the evaluation's synthetic sessions.
Storing the verdict is one more INSERT in the same database hop as the message and is
reported separately: on a throw-away SQLite file, and with ``--postgres`` also on a
scratch PostgreSQL database (``tierdesk_bench_bot``, created, migrated and dropped).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.eval_bot import sessions_generate

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "bot.json"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * q / 100))], 4)


PG_ADMIN_URL = "postgres://postgres@127.0.0.1:5432/test"
PG_BENCH_DB = "tierdesk_bench_bot"


@contextlib.contextmanager
def scratch_postgres() -> Iterator[str]:
    import psycopg

    with psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=10) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {PG_BENCH_DB} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {PG_BENCH_DB}")
    try:
        yield PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + PG_BENCH_DB
    finally:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=10) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {PG_BENCH_DB} WITH (FORCE)")


def store_timings(n: int) -> dict[str, list[float]]:
    """Milliseconds to store a message alone and with its verdict (what the consumer
    does with the check off and on), alternating, on the configured default database."""
    from chatbot.botcheck import Verdict
    from chatbot.botcheck.store import message_store_checked
    from chatbot.models import Conversation
    from chatbot.services import message_store

    conversation = Conversation.objects.create()
    verdict = Verdict(action="allow", reason="ok", score=0.0, features={"key_count": 30.0})
    plain, checked = [], []
    for i in range(n):
        t0 = time.perf_counter()
        message_store(conversation_id=conversation.pk, client_id=f"p{i}", text="where is it?")
        t1 = time.perf_counter()
        message_store_checked(
            conversation_id=conversation.pk, client_id=f"c{i}", text="where is it?",
            verdict=verdict,
        )  # fmt: skip
        t2 = time.perf_counter()
        plain.append((t1 - t0) * 1000)
        checked.append((t2 - t1) * 1000)
    return {"plain": plain, "checked": checked}


def store_summary(t: dict[str, list[float]]) -> dict[str, Any]:
    return {
        "message_only": {"p50": pct(t["plain"], 50), "p95": pct(t["plain"], 95)},
        "message_and_verdict": {"p50": pct(t["checked"], 50), "p95": pct(t["checked"], 95)},
        "added_p50": round(pct(t["checked"], 50) - pct(t["plain"], 50), 4),
        "added_p95": round(pct(t["checked"], 95) - pct(t["plain"], 95), 4),
        "n": len(t["plain"]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=3000)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--postgres", action="store_true", help="also time the INSERT on PG")
    parser.add_argument("--store-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.store_only:
        # Child of --postgres: DATABASE_URL names the scratch database.
        os.environ.update(TIERDESK_WARMUP_ON_START="false", CELERY_BROKER_URL="memory://")
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        import django
        from django.core.management import call_command

        django.setup()
        call_command("migrate", verbosity=0, interactive=False)
        print(json.dumps(store_timings(300)))
        return 0
    from bench._tmpdb import django_on_temp_sqlite

    sessions = sessions_generate(per_kind=50, seed=11)
    with django_on_temp_sqlite(shop=False):
        from django.test import override_settings

        from chatbot.botcheck import BotSession
        from chatbot.protocol import frame_parse

        check_ms: list[float] = []
        parse_extra_ms: list[float] = []
        total_ms: list[float] = []
        with override_settings(TIERDESK_BOTCHECK="enforce"):
            for i in range(args.messages):
                s = sessions[i % len(sessions)]
                bot = BotSession(mode="enforce", nonce=bytes.fromhex(s["nonce"]))
                plain = {"type": "message", "id": f"m{i}", "text": s["text"]}
                signed = dict(plain, bot={"v": 1, "seq": 1, "f": s["f"], "fp": s["fp"]})
                raw_plain, raw_signed = json.dumps(plain), json.dumps(signed)
                t0 = time.perf_counter()
                frame_parse(raw_plain, None)
                t1 = time.perf_counter()
                frame = frame_parse(raw_signed, None)
                t2 = time.perf_counter()
                verdict = bot.check(frame.bot, text=frame.text)  # type: ignore[union-attr]
                t3 = time.perf_counter()
                extra = max(0.0, (t2 - t1) - (t1 - t0))
                parse_extra_ms.append(extra * 1000)
                check_ms.append((t3 - t2) * 1000)
                total_ms.append((extra + (t3 - t2)) * 1000)
                assert verdict.score is not None  # every input verified and was scored
        store_ms = store_timings(300)
    pg_ms: dict[str, list[float]] = {}
    if args.postgres:
        # A separate process: Django's settings are fixed once it is set up.
        with scratch_postgres() as url:
            env = dict(os.environ, DATABASE_URL=url, REDIS_URL="", TIERDESK_ENV="test")
            env.pop("TIERDESK_VAR_DIR", None)
            out = subprocess.run(
                [sys.executable, "-m", "bench.bot", "--store-only"],
                cwd=ROOT, env=env, capture_output=True, text=True, check=True, timeout=600,
            )  # fmt: skip
            pg_ms = json.loads(out.stdout.strip().splitlines()[-1])
    result: dict[str, Any] = {
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
        "messages": args.messages,
        "verification_ms": {"p50": pct(total_ms, 50), "p95": pct(total_ms, 95),
                            "p99": pct(total_ms, 99), "max": pct(total_ms, 100)},
        "check_only_ms": {"p50": pct(check_ms, 50), "p95": pct(check_ms, 95)},
        "parse_bot_field_ms": {"p50": pct(parse_extra_ms, 50), "p95": pct(parse_extra_ms, 95)},
        "store_sqlite_ms": store_summary(store_ms),
        "store_postgres_ms": store_summary(pg_ms) if pg_ms else None,
        "target": "verification p95 <= 2 ms",
        "met": pct(total_ms, 95) <= 2.0,
        "load_average": list(os.getloadavg()),
    }  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
