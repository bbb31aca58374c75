"""Resilience (docs/resilience.md): shared state, breakers, token budgets, rate limits,
admission control, the waiting room, the response cache, context and the canary."""

from __future__ import annotations

import hashlib
import hmac

from .cache import REDIS_URL
from .core import TIERDESK_ENV
from .env import env_bool, env_float, env_int, env_list, env_str
from .security import SECRET_KEY

# --- resilience: shared state, breakers, budgets, limits, cache (docs/resilience.md) -------
# Redis for state every process shares (breaker, rate limits, response cache); empty
# keeps it in this process (the embedded default). Unreachable Redis fails open.
# "local" forces the in-process store even with Redis configured.
TIERDESK_STATE_REDIS_URL = env_str("TIERDESK_STATE_REDIS_URL", "") or REDIS_URL
if TIERDESK_STATE_REDIS_URL == "local":
    TIERDESK_STATE_REDIS_URL = ""
# Test runs share one Redis: each run's keys live under its own test database's name,
# and under pytest-xdist each worker's (pytest-django gives each worker its own database).
_RUN = env_str("TIERDESK_TEST_DB_NAME")
if _RUN and env_str("PYTEST_XDIST_WORKER"):
    _RUN = f"{_RUN}_{env_str('PYTEST_XDIST_WORKER')}"
TIERDESK_STATE_PREFIX = env_str("TIERDESK_STATE_PREFIX", "") or (
    f"tierdesk-{_RUN}" if _RUN else "tierdesk"
)
TIERDESK_STATE_REDIS_TIMEOUT_S = env_float("TIERDESK_STATE_REDIS_TIMEOUT_S", 0.25)
# After a Redis failure, fail open without trying Redis for this long.
TIERDESK_STATE_REDIS_RETRY_S = env_float("TIERDESK_STATE_REDIS_RETRY_S", 1.0)
# Upstream circuit breaker: errors (429, 5xx, timeouts) within the window that open it,
# how long it stays open before one trial request, and when an unanswered trial expires.
TIERDESK_BREAKER_ERROR_LIMIT = env_int("TIERDESK_BREAKER_ERROR_LIMIT", 5)
TIERDESK_BREAKER_ERROR_WINDOW_S = env_float("TIERDESK_BREAKER_ERROR_WINDOW_S", 30.0)
TIERDESK_BREAKER_OPEN_S = env_float("TIERDESK_BREAKER_OPEN_S", 30.0)
TIERDESK_BREAKER_TRIAL_TIMEOUT_S = env_float("TIERDESK_BREAKER_TRIAL_TIMEOUT_S", 30.0)
# Per-session token circuit breaker (docs/product.md: 5,000 tokens per 10 minutes, all tiers).
TIERDESK_SESSION_TOKEN_BUDGET = env_int("TIERDESK_SESSION_TOKEN_BUDGET", 5000)
TIERDESK_SESSION_TOKEN_WINDOW_S = env_int("TIERDESK_SESSION_TOKEN_WINDOW_S", 600)
# Rate limits (docs/product.md): global token bucket, dynamic window, per session and per IP
# (``limits`` notation), and the model queue's weights.
TIERDESK_RATE_LIMITS = env_bool("TIERDESK_RATE_LIMITS", True)
TIERDESK_RATE_BUCKET_PER_S = env_float("TIERDESK_RATE_BUCKET_PER_S", 120.0)
TIERDESK_RATE_BURST = env_float("TIERDESK_RATE_BURST", 300.0)
TIERDESK_RATE_WINDOW_MIN_PER_S = env_float("TIERDESK_RATE_WINDOW_MIN_PER_S", 50.0)
TIERDESK_RATE_WINDOW_MAX_PER_S = env_float("TIERDESK_RATE_WINDOW_MAX_PER_S", 200.0)
TIERDESK_RATE_PER_SESSION = env_str("TIERDESK_RATE_PER_SESSION", "20/minute")
TIERDESK_RATE_PER_IP = env_str("TIERDESK_RATE_PER_IP", "120/minute")
TIERDESK_VIP_WEIGHT = env_float("TIERDESK_VIP_WEIGHT", 3.0)
# Admission control (inference.admission, docs/protocol.md "Degraded replies"): each tier's
# first-chunk budget in ms from the shopper's message (0: none); a turn whose model can't
# start within it sends the tier's text that needs no model instead, and says so in
# `done.degraded`. With a free slot, one turn per probe interval still tries a tier whose
# recent first-chunk time is over budget, so the estimate follows a model that recovers.
# Off by default in test runs: a slow test machine must not turn the model replies the
# tests check into degraded ones (tests/chatbot/test_admission.py switches it on).
TIERDESK_ADMISSION = env_bool("TIERDESK_ADMISSION", TIERDESK_ENV != "test")
TIERDESK_L1_FIRST_CHUNK_BUDGET_MS = env_int("TIERDESK_L1_FIRST_CHUNK_BUDGET_MS", 400)
TIERDESK_L2_FIRST_CHUNK_BUDGET_MS = env_int("TIERDESK_L2_FIRST_CHUNK_BUDGET_MS", 800)
TIERDESK_L3_FIRST_CHUNK_BUDGET_MS = env_int("TIERDESK_L3_FIRST_CHUNK_BUDGET_MS", 1500)
TIERDESK_FIRST_CHUNK_BUDGET_MS = {
    "L1": TIERDESK_L1_FIRST_CHUNK_BUDGET_MS,
    "L2": TIERDESK_L2_FIRST_CHUNK_BUDGET_MS,
    "L3": TIERDESK_L3_FIRST_CHUNK_BUDGET_MS,
}
TIERDESK_ADMISSION_PROBE_S = env_float("TIERDESK_ADMISSION_PROBE_S", 2.0)
# A trial that misses its budget doubles the tier's trial interval, up to this; one that
# makes it sets it back to PROBE_S. A hopeless trial still takes the model's cores until
# it is cut off, and at 2 s intervals those trials slowed the other tiers' replies.
TIERDESK_ADMISSION_PROBE_MAX_S = env_float("TIERDESK_ADMISSION_PROBE_MAX_S", 30.0)
# Kept from each budget for the prediction's error (and then the degraded text's way to
# the shopper): admission aims at budget minus this.
TIERDESK_FIRST_CHUNK_MARGIN_MS = env_int("TIERDESK_FIRST_CHUNK_MARGIN_MS", 60)
# An admitted turn is cut off at its budget less this (the degraded text's way out): the
# prediction's margin above is for its error, and cutting there too degraded turns whose
# model was about to start (at 5 sessions every degraded turn was a deadline).
TIERDESK_FIRST_CHUNK_SEND_MS = env_int("TIERDESK_FIRST_CHUNK_SEND_MS", 20)
# The waiting room (chatbot.consumers, docs/protocol.md "wait"): connections per Daphne
# process beyond which a new shopper is accepted but waits, told "you are n-th", until
# one leaves (0: no limit). A message over the global bucket or the dynamic window waits
# for its turn too (at most TIERDESK_LOAD_WAIT_MAX_S), instead of a rate_limited error.
TIERDESK_WS_ACTIVE_MAX = env_int("TIERDESK_WS_ACTIVE_MAX", 400)
# Threads per Daphne process for the chat's database calls and for turn planning
# (chatbot.threads): not Channels' one thread-sensitive thread, which serialised every
# connection's database work. Each thread holds at most one PostgreSQL connection.
TIERDESK_DB_THREADS = env_int("TIERDESK_DB_THREADS", 8)
TIERDESK_PLAN_THREADS = env_int("TIERDESK_PLAN_THREADS", 4)
TIERDESK_LOAD_WAIT_MAX_S = env_float("TIERDESK_LOAD_WAIT_MAX_S", 30.0)
TIERDESK_NORMAL_WEIGHT = env_float("TIERDESK_NORMAL_WEIGHT", 1.0)
# Exact-match response cache: the switch, entry lifetime, and the tiers it serves.
# Off by default in test runs: a cached reply would hide a test's queued fake replies
# (tests/inference and tests/chatbot/test_l3_turns.py switch it on where they test it).
TIERDESK_RESPONSE_CACHE = env_bool("TIERDESK_RESPONSE_CACHE", TIERDESK_ENV != "test")
TIERDESK_RESPONSE_CACHE_TTL_S = env_int("TIERDESK_RESPONSE_CACHE_TTL_S", 86400)
# Raw model output is cached for these tiers only. L2 is not among them: it caches the
# answer its entailment guard let through, keyed by the knowledge-base version
# (chatbot.answerers.l2), so the cache never repeats an unchecked or stale answer.
TIERDESK_RESPONSE_CACHE_TIERS = env_list("TIERDESK_RESPONSE_CACHE_TIERS", ["L1"])
# Heat-decay context management (docs/product.md): x decay per unused turn, dropped below the floor.
TIERDESK_CONTEXT_DECAY = env_float("TIERDESK_CONTEXT_DECAY", 0.95)
TIERDESK_CONTEXT_DROP_BELOW = env_float("TIERDESK_CONTEXT_DROP_BELOW", 0.3)
TIERDESK_CONTEXT_HISTORY_CHARS = env_int("TIERDESK_CONTEXT_HISTORY_CHARS", 2400)
# The system-prompt canary (docs/resilience.md): derived from the secret key so every
# process agrees; set it to rotate it independently.
TIERDESK_PROMPT_CANARY = env_str("TIERDESK_PROMPT_CANARY", "") or (
    "ZQ" + hmac.new(SECRET_KEY.encode(), b"tierdesk-canary", hashlib.sha256).hexdigest()[:14]
)
