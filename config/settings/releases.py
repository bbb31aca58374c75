"""Gray release (docs/releases.md): the candidate's schedule, the guardrails, modelled
cost and the metrics."""

from __future__ import annotations

import json

from .core import TIERDESK_ENV
from .env import ImproperlyConfiguredEnv, env_bool, env_float, env_int, env_str
from .inference import TIERDESK_L3_MODEL

# --- gray release, metrics and CSAT (docs/releases.md) -------------------------------------
# The candidate's schedule: start share, step, step interval and the ceiling (percent of
# sessions). The last weight is held PROMOTE_HOLD_MIN before an automatic promotion.
TIERDESK_RELEASE_START_WEIGHT = env_int("TIERDESK_RELEASE_START_WEIGHT", 10)
TIERDESK_RELEASE_STEP_PCT = env_int("TIERDESK_RELEASE_STEP_PCT", 5)
TIERDESK_RELEASE_STEP_INTERVAL_MIN = env_int("TIERDESK_RELEASE_STEP_INTERVAL_MIN", 120)
TIERDESK_RELEASE_MAX_WEIGHT = env_int("TIERDESK_RELEASE_MAX_WEIGHT", 50)
TIERDESK_RELEASE_AUTO_PROMOTE = env_bool("TIERDESK_RELEASE_AUTO_PROMOTE", True)
TIERDESK_RELEASE_PROMOTE_HOLD_MIN = env_int("TIERDESK_RELEASE_PROMOTE_HOLD_MIN", 120)
# How often Celery beat runs releases.release_tick (guardrails, promotion, schedule).
TIERDESK_RELEASE_TICK_S = env_float("TIERDESK_RELEASE_TICK_S", 60.0)
# Guardrails (docs/product.md): candidate vs stable p95 first-chunk latency +15% (and at least
# +LATENCY_MIN_MS, so 2 ms template replies can't trip it), error rate +0.5 pp, CSAT -2 pp.
TIERDESK_RELEASE_GUARD_LATENCY_PCT = env_float("TIERDESK_RELEASE_GUARD_LATENCY_PCT", 15.0)
TIERDESK_RELEASE_GUARD_LATENCY_MIN_MS = env_float("TIERDESK_RELEASE_GUARD_LATENCY_MIN_MS", 20.0)
TIERDESK_RELEASE_GUARD_ERROR_PP = env_float("TIERDESK_RELEASE_GUARD_ERROR_PP", 0.5)
TIERDESK_RELEASE_GUARD_CSAT_PP = env_float("TIERDESK_RELEASE_GUARD_CSAT_PP", 2.0)
# Degraded-share guardrail (admission control): a candidate that sends this many points
# more of its model turns without a model than stable does is breached.
TIERDESK_RELEASE_GUARD_DEGRADED_PP = env_float("TIERDESK_RELEASE_GUARD_DEGRADED_PP", 5.0)
# Handoff guardrail: a candidate whose share of handoff requests (turns routed to the
# handoff intent, releases.metrics.handoff_requested) is this many points above stable's.
TIERDESK_RELEASE_GUARD_HANDOFF_PP = env_float("TIERDESK_RELEASE_GUARD_HANDOFF_PP", 2.0)
# The statistical gate: minimum sample per variant, one-sided two-proportion z-test at
# ALPHA, and this many breaches of one check in a row before the rollback, counted over
# the evaluations where that check had its sample (only a pass with data resets).
TIERDESK_RELEASE_MIN_REPLIES = env_int("TIERDESK_RELEASE_MIN_REPLIES", 200)
TIERDESK_RELEASE_MIN_RATINGS = env_int("TIERDESK_RELEASE_MIN_RATINGS", 100)
TIERDESK_RELEASE_ALPHA = env_float("TIERDESK_RELEASE_ALPHA", 0.01)
TIERDESK_RELEASE_BREACHES_TO_ROLLBACK = env_int("TIERDESK_RELEASE_BREACHES_TO_ROLLBACK", 2)
# Windows the guardrails compare (minutes, never before the candidate started); CSAT is
# sparse, so its window is longer.
TIERDESK_RELEASE_GUARD_WINDOW_MIN = env_int("TIERDESK_RELEASE_GUARD_WINDOW_MIN", 60)
TIERDESK_RELEASE_CSAT_WINDOW_MIN = env_int("TIERDESK_RELEASE_CSAT_WINDOW_MIN", 360)
# Modelled cost: USD per million (prompt, completion) tokens per model id; "*" prices
# any other model. Local models are priced at an estimate of their compute per token.
TIERDESK_MODEL_PRICES: dict[str, list[float]] = {
    "gemma3-270m-q4km": [0.02, 0.02],
    "qwen2.5-coder-0.5b-instruct-q4km": [0.04, 0.04],
    "qwen2.5-coder-1.5b-instruct-q4km": [0.1, 0.1],
    # The same two models under the names they had before, for metrics stored then.
    "qwen2.5-0.5b-instruct-q4km": [0.04, 0.04],
    "qwen2.5-1.5b-instruct-q4km": [0.1, 0.1],
    "gpt-4o-mini": [0.15, 0.6],
    "*": [0.15, 0.6],
}


def _model_prices(raw: str) -> dict[str, list[float]]:
    try:
        return {
            str(model): [float(price[0]), float(price[1])]
            for model, price in json.loads(raw).items()
        }
    except (ValueError, TypeError, IndexError, AttributeError) as exc:
        raise ImproperlyConfiguredEnv(
            'TIERDESK_MODEL_PRICES: JSON like {"gpt-4o-mini": [0.15, 0.6], "*": [0.15, 0.6]}'
        ) from exc


if env_str("TIERDESK_MODEL_PRICES"):
    TIERDESK_MODEL_PRICES = _model_prices(env_str("TIERDESK_MODEL_PRICES"))
# The all-L3 baseline: every reply priced on this model, with this many prompt tokens
# (system prompt and context) on top of the question.
TIERDESK_COST_BASELINE_MODEL = env_str("TIERDESK_COST_BASELINE_MODEL") or TIERDESK_L3_MODEL
TIERDESK_COST_BASELINE_PROMPT_TOKENS = env_int("TIERDESK_COST_BASELINE_PROMPT_TOKENS", 150)
# /metrics (Prometheus): "Authorization: Bearer <token>"; empty = only signed-in
# operators. The recent-window gauges cover this many minutes.
TIERDESK_METRICS_TOKEN = env_str("TIERDESK_METRICS_TOKEN", "")
TIERDESK_METRICS_PROM_WINDOW_MIN = env_int("TIERDESK_METRICS_PROM_WINDOW_MIN", 5)
# Each process adds its finished replies to the per-minute release metrics every this
# many seconds (releases.metrics.ReplyBuffer: one write per minute row, not a locked row
# update per reply; a SIGKILLed process loses its last interval). 0 writes every reply at
# once, as the test suite does so that a reply is in its row when the test reads it.
TIERDESK_METRICS_FLUSH_S = env_float(
    "TIERDESK_METRICS_FLUSH_S", 0.0 if TIERDESK_ENV == "test" else 5.0
)
