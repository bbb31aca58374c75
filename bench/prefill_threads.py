"""The fallback model's prompt-eval and decode tokens/s by thread count, on idle cores
and beside one busy core (docs/benchmarks.md, "Load": why the model-phrased share is
below target).

The role's engine as the model server builds it (``server_params``), with ``threads`` 1
and 2, each sent the same ~390-token L2-like prompt (passages, then a question) three
times with the prompt cache off; then the same while another process spins on one core
(``while True: pass``), as Daphne's planning does under load. Prints one JSON line per
request. Heavy (loads the model four times): ``.venv/bin/python -m bench.prefill_threads``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

from bench import l1


def main() -> int:
    os.environ.update(l1.bench_env(warmup=False))
    import django

    django.setup()
    import xllamacpp as xlc
    from django.conf import settings

    from inference.backends.llamacpp import server_params
    from inference.catalog import resolve_model_file

    cfg = dict(settings.LOCAL_MODELS["fallback"]["CONFIG"])
    path, _ = resolve_model_file(
        model=cfg["model"],
        path=str(cfg.get("path", "")),
        sha256=str(cfg.get("sha256", "")),
        model_dir=settings.TIERDESK_MODEL_DIR,
    )
    # A ~390-token prompt of the L2 kind (passages, then the question).
    passage = (
        "Returns are accepted within 30 days of delivery for unworn items with their tags "
        "on; sale items are final sale and can't be returned, and gift cards can't be "
        "returned either."
    )
    text = "Passages:\n" + " ".join([passage] * 9) + "\n\nQuestion: can I return a sale item?"
    msgs = [
        {
            "role": "system",
            "content": "You are the customer-service assistant of an online clothing shop.",
        },
        {"role": "user", "content": text},
    ]
    for hog in (False, True):
        hog_proc = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if hog else None
        try:
            for threads in (1, 2):
                config = dict(cfg)
                config["threads"] = threads
                server: Any = xlc.Server(server_params(config, path))
                for _ in range(3):
                    timings: dict[str, Any] = {}

                    def on_chunk(data: Any, timings: dict[str, Any] = timings) -> bool:
                        if data.get("timings"):
                            timings.update(data["timings"])
                        return False

                    started = time.perf_counter()
                    payload = {
                        "messages": msgs,
                        "stream": True,
                        "max_tokens": 24,
                        "temperature": 0.1,
                        "cache_prompt": False,
                    }
                    server.handle_chat_completions(payload, on_chunk)
                    row = {
                        "hog": hog,
                        "threads": threads,
                        "prompt_n": timings.get("prompt_n"),
                        "prompt_tok_s": round(timings.get("prompt_per_second", 0), 1),
                        "decode_tok_s": round(timings.get("predicted_per_second", 0), 1),
                        "wall_ms": round((time.perf_counter() - started) * 1000),
                    }
                    print(json.dumps(row), flush=True)
                del server
        finally:
            if hog_proc is not None:
                hog_proc.kill()
    print(json.dumps({"load1": round(os.getloadavg()[0], 2)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
