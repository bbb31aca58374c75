"""Compression benchmark: spaCy compression time p95 and ratio over real L1 prompts, and
the fast model's first-token latency and guard pass rate for the compressed against the
uncompressed L1 prompt, measured side by side in one run.

    .venv/bin/python -m bench.compression     # writes bench/results/compression.json

Runs on a throw-away SQLite demo shop. The prompts are the dialogue's own
(``chatbot.answerers.l1.phrase`` with ``TIERDESK_L1_COMPRESSION`` off and on); the model is
``inference.registry.get_backend("fast")``. Each case runs both variants back to back,
alternating which goes first, so machine noise hits both alike. Every few-shot prefix
is warmed once per variant before measuring (production keeps them in the prompt cache).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench._tmpdb import django_on_temp_sqlite

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "compression.json"


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * q / 100))], 3)


@dataclass
class Case:
    language: str
    intent: str
    key: str
    template_text: str
    prompts: dict[str, Any]  # variant -> L1Plan


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--orders", type=int, default=12, help="orders for the model run")
    parser.add_argument("--compress-orders", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3, help="first-token runs per prompt")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    started_at = datetime.now(UTC)
    load_start = os.getloadavg()

    with django_on_temp_sqlite(shop=True):
        from django.test import override_settings

        from chatbot.answerers.base import TurnContext
        from chatbot.answerers.l1 import phrase
        from chatbot.answerers.order_format import order_facts, shipping_text
        from chatbot.orders.backends import get_order_service
        from chatbot.orders.models import Order
        from inference import compress
        from inference.fact_guard import guard_check
        from inference.prompts import L1_COMPRESSED_MAX_CHARS, facts_line, l1_question
        from inference.registry import get_backend
        from routing.templates import template_get, template_render

        service = get_order_service()
        orders = list(Order.objects.select_related("customer").order_by("id"))

        def cases_for(order: Any) -> list[tuple[str, str, str, dict[str, str]]]:
            facts = service.order_get(
                customer_id=order.customer.customer_id, order_id=order.order_id
            )
            assert facts is not None
            out = []
            for language in ("en", "zh"):
                values = order_facts(facts, language)
                for intent, key in (
                    ("order_status", facts.status),
                    ("delivery_time", facts.status),
                    ("refund_status", "refunded" if facts.refunds else "none"),
                ):
                    out.append((language, intent, key, values))
            return out

        # 1. Compression alone: time (pipelines warm, cache cleared per call) and ratio.
        compress.compress_warm_up()
        times: dict[str, list[float]] = {"en": [], "zh": []}
        lengths, ratio_nl, ratio_kv, over = [], [], [], 0
        shipping = None
        for order in orders[: args.compress_orders]:
            for language, intent, key, values in cases_for(order):
                template = template_get(intent=intent, key=key, language=language)
                reply = template_render(template, values)
                question = l1_question(reply=reply, language=language)
                compress._compress_cached.cache_clear()
                result = compress.prompt_compress(question, language=language)
                times[language].append(result.elapsed_ms)
                lengths.append(len(result.text))
                over += len(result.text) > L1_COMPRESSED_MAX_CHARS
                ratio_nl.append(len(result.text) / len(question))
                keys = [k for k in values if "{" + k + "}" in template and values.get(k)]
                ratio_kv.append(len(result.text) / len(facts_line(values, keys)))
        for language in ("en", "zh"):
            options = "; ".join(
                f"{o.name} ${o.price}" for o in service.shipping_options()
            )  # shipping_cost is phrased too; report its length separately
            reply = template_render(
                template_get(intent="shipping_cost", key="default", language=language),
                {"options": shipping_text(TurnContext("", language, {}, "", []))},
            )
            compress._compress_cached.cache_clear()
            text = compress.prompt_compress(
                l1_question(reply=reply, language=language), language=language
            ).text
            shipping = shipping or {}
            shipping[language] = {"chars": len(text), "text": text, "options": options}

        compression = {
            "prompts": len(lengths),
            "time_ms": {
                lang: {"p50": pct(v, 50), "p95": pct(v, 95), "max": pct(v, 100)}
                for lang, v in times.items()
            },
            "time_ms_all": {
                "p50": pct(times["en"] + times["zh"], 50),
                "p95": pct(times["en"] + times["zh"], 95),
            },
            "compressed_chars": {"mean": round(statistics.mean(lengths), 1), "max": max(lengths)},
            "over_80_chars": over,
            "ratio_vs_natural_language_instruction": round(statistics.mean(ratio_nl), 3),
            "ratio_vs_key_value_facts_line": round(statistics.mean(ratio_kv), 3),
            "shipping_cost": shipping,
        }
        print(f"compression: {json.dumps(compression, ensure_ascii=False)}", flush=True)

        # 2. The fast model, both variants side by side.
        cases: list[Case] = []
        for order in orders[: args.orders]:
            for language, intent, key, values in cases_for(order):
                if intent == "refund_status" and key == "none" and language == "zh":
                    continue  # keep the run short; EN covers the case
                prompts = {}
                for variant, flag in (("uncompressed", False), ("compressed", True)):
                    with override_settings(TIERDESK_L1_COMPRESSION=flag):
                        ctx = TurnContext(
                            "", language, {}, order.customer.customer_id, [], service=service
                        )
                        prompts[variant] = phrase(ctx, intent, key, values)
                cases.append(Case(language, intent, key, prompts["compressed"].text, prompts))

        print(f"{len(cases)} cases x 2 variants; loading the fast model...", flush=True)
        backend = get_backend("fast")
        backend.load()

        def run(plan: Any, *, first_only: bool = False) -> tuple[float | None, str, int]:
            request = plan.generation
            if first_only:  # latency: stop after the first token (prompt eval dominates)
                request = replace(request, max_tokens=1)
            started = time.perf_counter()
            first: float | None = None
            text = ""
            for chunk in backend.stream(request):
                if chunk.text and first is None:
                    first = (time.perf_counter() - started) * 1000
                text += chunk.text
            return first, text, backend.count_tokens(request.prompt)

        # Warm every few-shot prefix once per variant (unmeasured).
        warmed: set[tuple[str, str, str, str]] = set()
        for case in cases:
            for variant, plan in case.prompts.items():
                prefix = (variant, case.language, case.intent, case.key)
                if prefix not in warmed:
                    warmed.add(prefix)
                    run(plan, first_only=True)

        print(f"warmed {len(warmed)} prefixes; measuring...", flush=True)
        samples: dict[str, list[dict[str, Any]]] = {"uncompressed": [], "compressed": []}
        for n, case in enumerate(cases):
            if n % 10 == 0:
                print(f"  case {n}/{len(cases)}", flush=True)
            order_variants = ["uncompressed", "compressed"]
            if n % 2:
                order_variants.reverse()
            for variant in order_variants:
                plan = case.prompts[variant]
                firsts = [run(plan, first_only=True)[0] for _ in range(args.repeats)]
                _, text, prompt_tokens = run(plan)
                verdict = guard_check(
                    text=text.strip(),
                    facts=plan.guard_facts or {},
                    required=plan.guard_required,
                    template_text=plan.text,
                )
                samples[variant].append(
                    {
                        "first_ms": statistics.median(f for f in firsts if f is not None),
                        "first_ms_runs": firsts,
                        "ok": verdict.ok,
                        "reason": verdict.reason,
                        "prompt_tokens": prompt_tokens,
                        "prompt_chars": len(plan.generation.prompt),
                        "language": case.language,
                        "reply": text.strip(),
                    }
                )
        backend.close()

    def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
        firsts = [r["first_ms"] for r in rows if r["first_ms"] is not None]
        return {
            "requests": len(rows),
            "first_token_ms": {
                "p50": pct(firsts, 50),
                "p95": pct(firsts, 95),
                "mean": round(statistics.mean(firsts), 1),
            },
            "prompt_tokens_mean": round(statistics.mean(r["prompt_tokens"] for r in rows), 1),
            "guard_pass_share": round(sum(r["ok"] for r in rows) / len(rows), 4),
            "guard_pass_share_by_language": {
                lang: round(
                    sum(r["ok"] for r in rows if r["language"] == lang)
                    / max(1, sum(r["language"] == lang for r in rows)),
                    4,
                )
                for lang in ("en", "zh")
            },
            "guard_failures": [r["reason"] for r in rows if not r["ok"]][:10],
        }

    unc, com = summary(samples["uncompressed"]), summary(samples["compressed"])
    ratio = {
        "first_token_p50_compressed_over_uncompressed": round(
            com["first_token_ms"]["p50"] / unc["first_token_ms"]["p50"], 3
        ),
        "first_token_p95_compressed_over_uncompressed": round(
            com["first_token_ms"]["p95"] / unc["first_token_ms"]["p95"], 3
        ),
        "first_token_mean_compressed_over_uncompressed": round(
            com["first_token_ms"]["mean"] / unc["first_token_ms"]["mean"], 3
        ),
        "guard_pass_share_delta_pp": round(
            (com["guard_pass_share"] - unc["guard_pass_share"]) * 100, 2
        ),
    }
    report = {
        "benchmark": "compression",
        "timestamp": started_at.isoformat(timespec="seconds"),
        "machine": {
            "nproc": os.cpu_count(),
            "platform": platform.platform(),
            "loadavg_start": list(load_start),
            "loadavg_end": list(os.getloadavg()),
        },
        "compression": compression,
        "fast_model": {
            "model": getattr(backend, "model_id", ""),
            "cases": len(cases),
            "uncompressed": unc,
            "compressed": com,
            "ratios": ratio,
            "examples": {
                v: [
                    {"prompt_tail": c.prompts[v].generation.prompt[-160:], "reply": s["reply"]}
                    for c, s in list(zip(cases, samples[v], strict=True))[:3]
                ]
                for v in samples
            },
        },
        "targets": {"compressed_chars_max": 80},
        "verdicts": {
            "compressed_within_80_chars": over == 0,
            "guard_pass_not_lower": com["guard_pass_share"] >= unc["guard_pass_share"],
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    for name, figures in (("uncompressed", unc), ("compressed", com)):
        latency, guard = json.dumps(figures["first_token_ms"]), figures["guard_pass_share"]
        print(f"fast model: {name:<12} first token {latency}, guard pass {guard}")
    print(f"ratios: {json.dumps(ratio)}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
