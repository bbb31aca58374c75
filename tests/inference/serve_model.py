"""A separate llama.cpp server process for fault tests (so a test can kill -9 it).

Usage: python -m tests.inference.serve_model MODEL_PATH N_PARALLEL
Prints the listening address on stdout, then serves until it is killed.
"""

from __future__ import annotations

import sys
import time


def main() -> None:
    import xllamacpp as xlc

    params = xlc.CommonParams()
    params.model.path = sys.argv[1]
    params.n_parallel = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    params.n_ctx = params.n_parallel * 2048
    params.cpuparams.n_threads = 2
    params.cpuparams_batch.n_threads = 2
    params.cache_prompt = True
    params.warmup = False
    params.verbosity = -1
    server = xlc.Server(params)
    print(server.listening_address, flush=True)
    deadline = time.monotonic() + float(sys.argv[3]) if len(sys.argv) > 3 else None
    # Stops by itself even if the test that started it dies.
    while deadline is None or time.monotonic() < deadline:
        time.sleep(0.5)


if __name__ == "__main__":
    main()
