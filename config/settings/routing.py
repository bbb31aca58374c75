"""The router: the classifier's thresholds, retraining and embeddings, and the
tiered or all-L3 routing mode."""

from __future__ import annotations

from .core import TIERDESK_ENV
from .env import ImproperlyConfiguredEnv, env_bool, env_float, env_str

# --- routing --------------------------------------------------------------------------
# Below this classifier probability the bot asks a clarifying question instead of guessing.
TIERDESK_ROUTER_CLARIFY_THRESHOLD = env_float("TIERDESK_ROUTER_CLARIFY_THRESHOLD", 0.45)
# After an admin edits intents or examples, the Celery task routing.router_retrain trains
# the classifier once and stores it; every process loads it. Off (the test default), a
# process that finds no stored model trains it itself.
TIERDESK_ROUTER_RETRAIN_ASYNC = env_bool("TIERDESK_ROUTER_RETRAIN_ASYNC", TIERDESK_ENV != "test")
# How long a process keeps its previous classifier while waiting for the task's model
# before it trains one itself (a broker that is down must not freeze the router).
TIERDESK_ROUTER_RETRAIN_GRACE_S = env_float("TIERDESK_ROUTER_RETRAIN_GRACE_S", 120.0)
# Sentence embeddings (the MiniLM of knowledge.embedding) beside the TF-IDF features of
# the intent classifier: BANKING77 with 10 examples per intent 0.71 -> 0.86 (make
# eval-router). Costs one embedding per message (shared with retrieval's cache) and the
# embedding of every example at training. Off by default in tests, which train often.
TIERDESK_ROUTER_EMBEDDINGS = env_bool("TIERDESK_ROUTER_EMBEDDINGS", TIERDESK_ENV != "test")
# With embeddings: the embedding adapted to the shop's intents (routing/encoder.py, a
# SetFit-style contrastive adapter trained in the retrain task, stored in the classifier).
# Off by default: on the default shop data's held-out set it cost 2 English and 1 Chinese
# tier decisions (EN 0.983 -> 0.978) for 1 more out-of-scope message caught, and on
# BANKING77's test split 10-shot routed accuracy fell 0.823 -> 0.815 while out-of-scope
# recall rose 0.824 -> 0.850 (docs/routing.md, "The embedding adapter"). A shop that
# cares most about unknown questions may turn it on. Tests keep it off too.
TIERDESK_ROUTER_FINETUNE = env_bool("TIERDESK_ROUTER_FINETUNE", False)
# Its cost cap per adapter (a retrain trains two): a longer run stops early and keeps
# what it learnt.
TIERDESK_ROUTER_FINETUNE_BUDGET_S = env_float("TIERDESK_ROUTER_FINETUNE_BUDGET_S", 120.0)
# "tiered": the router picks L1/L2/L3 per message. "l3_only": every message goes to the
# large tier (routing off), to measure the baseline (make load, docs/routing.md).
TIERDESK_ROUTING = env_str("TIERDESK_ROUTING", "tiered")
if TIERDESK_ROUTING not in {"tiered", "l3_only"}:
    raise ImproperlyConfiguredEnv(f"TIERDESK_ROUTING={TIERDESK_ROUTING!r}: use tiered|l3_only")

# Knowledge-aware routing (routing.knowledge_route): a general question that an
# approved card or a relevant passage answers goes to L2 even if the classifier chose
# an order intent or out-of-scope.
TIERDESK_ROUTE_BY_KNOWLEDGE = env_bool("TIERDESK_ROUTE_BY_KNOWLEDGE", True)
