"""How soon an L2 or L3 first chunk can come on this machine (issue #16, session 10).

An L2/L3 first chunk is the model's first complete sentence that the guard then
checks (``chatbot.answerers.reply_guards``: entailment for L2, grounding for L3), so on idle
cores it can't come sooner than

    prompt evaluation (uncached prompt tokens / prompt-eval tokens/s)
  + decoding the first sentence (its tokens / decode tokens/s)
  + the guard's check of that sentence.

This measures each term on the real prompts: the load's L2 and L3 messages
(``bench.load.message_pools``) planned in-process by ``chatbot.dialogue.Dialogue`` as
the server plans them, sent one at a time, with nothing else running, to an
``xllamacpp.Server`` built with the model server's own parameters for the role
(``inference.backends.llamacpp.server_params``: threads, slots, prompt cache). Each
prompt goes twice: ``warm``, first, with the cache on (what a long-running server reuses
from other prompts: the system prompt, the shared prefix), then ``cold`` with the cache
off (all its tokens evaluated: the prompt's size and the raw prompt-eval rate).
For L2 it also tries the prompt with only the best passage (``one_passage``) and with
the question before the passages (``question_first``).

Run (heavy: loads the fallback model): ``.venv/bin/python -m bench.prefill --out
bench/results/prefill.json`` against the bench database with the knowledge base ingested
(``make load`` or ``manage.py knowledge_ingest`` sets it up).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench import l1

OUT = l1.ROOT / "bench" / "results" / "prefill.json"


def first_sentence_end(text: str) -> int:
    """Where the guard's first sentence ends in ``text`` (0: not yet), by the guard's
    own rule (``EntailmentGuard._release``): a "." at the very end may be a decimal."""
    from knowledge import entail

    for m in entail.SENTENCE.finditer(text):
        if m.end() > 0 and not (m.end() == len(text) and text[-1] in ".!?"):
            return m.end()
    return 0


class Engine:
    """The role's llama.cpp engine in this process, configured as the model server's."""

    def __init__(self, role: str) -> None:
        import xllamacpp as xlc
        from django.conf import settings

        from inference.backends.llamacpp import server_params
        from inference.catalog import resolve_model_file

        config = dict(settings.LOCAL_MODELS[role]["CONFIG"])
        path, _sha = resolve_model_file(
            model=str(config.get("model", "")),
            path=str(config.get("path", "")),
            sha256=str(config.get("sha256", "")),
            model_dir=settings.TIERDESK_MODEL_DIR,
        )
        self.config = {
            "model": path.name,
            "threads": int(config.get("threads") or settings.TIERDESK_THREADS),
            "n_parallel": int(config.get("n_parallel", 4)),
        }
        self.server: Any = xlc.Server(server_params(config, path))

    def chat(self, messages: list[dict[str, str]], max_tokens: int, cache: bool) -> dict[str, Any]:
        payload = {
            "messages": messages,
            "stream": True,
            "max_tokens": max_tokens,
            "temperature": 0.1,
            "seed": 11,
            "cache_prompt": cache,
        }
        state: dict[str, Any] = {
            "text": "",
            "deltas": 0,
            "first": None,
            "sentence": None,
            "timings": {},
        }
        started = time.perf_counter()

        def on_chunk(data: Any) -> bool:
            now = time.perf_counter()
            choices = data.get("choices") or []
            delta = (choices[0].get("delta") or {}).get("content") if choices else None
            if delta:
                state["text"] += str(delta)
                state["deltas"] += 1  # one streamed piece per token
                if state["first"] is None and state["text"].strip():
                    state["first"] = now
                if state["sentence"] is None and first_sentence_end(state["text"]):
                    end = first_sentence_end(state["text"])
                    state["sentence"] = (now, state["text"][:end], state["deltas"])
            if data.get("timings"):
                state["timings"] = data["timings"]
            return False

        self.server.handle_chat_completions(payload, on_chunk)
        ended = time.perf_counter()
        t = state["timings"]
        out: dict[str, Any] = {
            "prompt_n": int(t.get("prompt_n", 0)),
            "cache_n": int(t.get("cache_n", 0)),
            "prompt_ms": round(float(t.get("prompt_ms", 0.0)), 1),
            "prompt_tok_s": round(float(t.get("prompt_per_second", 0.0)), 1),
            "decode_tok_s": round(float(t.get("predicted_per_second", 0.0)), 1),
            "completion_n": int(t.get("predicted_n", 0)),
            "total_ms": round((ended - started) * 1000, 1),
            "text": state["text"],
        }
        if state["first"] is not None:
            out["first_token_ms"] = round((state["first"] - started) * 1000, 1)
        if state["sentence"] is not None:
            at, sentence, tokens = state["sentence"]
            out["first_sentence_ms"] = round((at - started) * 1000, 1)
            out["first_sentence"] = sentence
            # Tokens streamed until the sentence was known to end (the guard waits for
            # the token after its full stop, too).
            out["sentence_tokens"] = tokens
        return out


def as_messages(generation: Any) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in generation.messages]


def judge_ms(tier: str, sentence: str, grounding: dict[str, Any]) -> float:
    """The guard's check of the first sentence, timed in this process."""
    from chatbot.answerers.l3_records import SUMMARY_LINES
    from chatbot.answerers.reply_guards import EntailmentGuard, GroundedGuard

    started = time.perf_counter()
    if tier == "L2":
        EntailmentGuard(
            question=grounding["question"],
            passages=grounding["passages"],
            extract=grounding.get("extract", ""),
            dont_know="",
        )._judge(sentence)
    else:
        guard = GroundedGuard(
            question=grounding["question"],
            passages=grounding["passages"],
            abstain=grounding["abstain"],
            rule=grounding.get("rule", ""),
            bare=SUMMARY_LINES,
        )
        judge = getattr(guard, "_judge", None)
        if judge is not None:
            judge(sentence)
    return (time.perf_counter() - started) * 1000


def l2_variants(question: str, language: str) -> dict[str, list[dict[str, str]]]:
    """The L2 prompt with the best passage only, and with the question first."""
    from django.conf import settings

    from knowledge.answer import answer_plan as kb_plan
    from knowledge.answer import prompt_build

    answer = kb_plan(question=question, language=language)
    if answer.generation is None or not answer.passages:
        return {}
    budget = settings.TIERDESK_KB_CONTEXT_TOKENS
    one = prompt_build(
        question=question,
        language=answer.language,
        passages=answer.passages[:1],
        summaries=[],
        chat=True,
        budget=max(60, budget // max(1, len(answer.passages))),
    )
    built = as_messages(answer.generation)
    system, user = built[0], built[-1]
    head, sep, q = user["content"].rpartition("\n\n")
    first = [system, {"role": "user", "content": f"{q}\n\n{head}" if sep else user["content"]}]
    return {"one_passage": as_messages(one), "question_first": first}


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"n": len(rows)}
    for key in (
        "prompt_tokens",
        "prompt_n",
        "cache_n",
        "prompt_ms",
        "prompt_tok_s",
        "decode_tok_s",
        "first_token_ms",
        "sentence_tokens",
        "first_sentence_ms",
        "judge_ms",
        "floor_ms",
    ):
        values = [float(r[key]) for r in rows if r.get(key) is not None]
        if values:
            out[key] = {
                "p50": round(statistics.median(values), 1),
                "min": round(min(values), 1),
                "p95": l1.pct(values, 95),
            }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--l2", type=int, default=12, help="L2 messages (spread over the pool)")
    parser.add_argument("--l3", type=int, default=8, help="L3 messages")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    os.environ.update(l1.bench_env(warmup=False))
    sys.path.insert(0, str(l1.ROOT))
    import django

    django.setup()
    from django.conf import settings

    from bench.load import message_pools
    from chatbot.dialogue import Dialogue, TurnContext
    from knowledge.text import language_detect

    pools = message_pools()
    customer = l1.scenarios_build(seed=11, c1_convs=1, c1_msgs=1, sessions=0, msgs=0)[0]
    customer_id = customer.lanes[0][0].customer_id
    picked: list[tuple[str, str]] = []
    for tier, n in (("L2", args.l2), ("L3", args.l3)):
        pool = pools[tier]
        step = max(1, len(pool) // max(1, n))
        picked += [(tier, text) for _intent, text in pool[::step][:n]]
    plans = []
    for tier, text in picked:
        language = language_detect(text)
        ctx = TurnContext(
            text=text, language=language, state={}, customer_id=customer_id, history=[]
        )
        plan = Dialogue(ctx).plan()
        grounding = getattr(plan, "grounding", None)
        if plan.tier != tier or plan.generation is None or not plan.generation.messages:
            l1.log(f"{tier}: no model prompt for {text!r} ({plan.tier}, {plan.intent})")
            continue
        plans.append((tier, text, language, plan, grounding))
    role = settings.TIERDESK_KB_ANSWER_ROLE
    l1.log(f"{len(plans)} prompts; loading the {role} model...")
    engine = Engine(role)
    for _ in range(3):  # the model server's warm-up does the same before it is ready
        engine.chat([{"role": "user", "content": "Say hello to a shopper."}], 16, cache=True)
    rows: list[dict[str, Any]] = []
    for tier, text, language, plan, grounding in plans:
        assert plan.generation is not None  # kept above only with a model prompt
        max_tokens = plan.generation.max_tokens
        variants = {"as_built": as_messages(plan.generation)}
        if tier == "L2":
            variants |= l2_variants(text, language)
        for name, messages in variants.items():
            # First with the cache on: this prompt is new, so what is reused is what a
            # running server shares between prompts (the system prompt, the prefix).
            warm = engine.chat(messages, max_tokens, cache=True)
            cold = engine.chat(messages, max_tokens, cache=False)
            for mode, res in (("cold", cold), ("warm", warm)):
                row: dict[str, Any] = {
                    "tier": tier,
                    "variant": name,
                    "mode": mode,
                    "question": text,
                    "prompt_tokens": cold["prompt_n"],
                    **res,
                }
                sentence = res.get("first_sentence")
                if sentence and grounding:
                    row["judge_ms"] = round(judge_ms(tier, sentence, grounding), 1)
                if row.get("first_sentence_ms") is not None and row.get("judge_ms") is not None:
                    row["floor_ms"] = round(row["first_sentence_ms"] + row["judge_ms"], 1)
                rows.append(row)
                l1.log(
                    f"{tier} {name} {mode}: prompt {row['prompt_n']} (+{row['cache_n']} cached)"
                    f" {row['prompt_ms']} ms ({row['prompt_tok_s']} tok/s), first token "
                    f"{row.get('first_token_ms')} ms, first sentence "
                    f"{row.get('first_sentence_ms')} ms, judge {row.get('judge_ms')} ms"
                )
    groups: dict[str, Any] = {}
    for row in rows:
        groups.setdefault(f"{row['tier']}.{row['variant']}.{row['mode']}", []).append(row)
    result = {
        "engine": engine.config | {"role": role},
        "budgets_ms": settings.TIERDESK_FIRST_CHUNK_BUDGET_MS,
        "load1": round(os.getloadavg()[0], 2),
        "at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "summary": {k: summary(v) for k, v in sorted(groups.items())},
        "rows": rows,
    }
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    print(json.dumps(result["summary"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
