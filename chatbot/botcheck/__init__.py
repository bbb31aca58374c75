"""Behavioural bot check (docs/botcheck.md).

The widget's WebAssembly module (frontend/wasm/botcheck.ts) turns each message's
pointer, keyboard, touch and focus events into a feature vector and a fingerprint bound
to this connection's nonce; this package verifies the binding, scores the features and
applies the shop's policy before any model runs. Only the features are stored.
"""

from __future__ import annotations

from .digest import fingerprint_digest
from .features import FEATURE_NAMES, Features
from .score import Score, score_features
from .service import (
    BotSession,
    Evidence,
    EvidenceError,
    Verdict,
    evidence_parse,
)

__all__ = [
    "FEATURE_NAMES",
    "BotSession",
    "Evidence",
    "EvidenceError",
    "Features",
    "Score",
    "Verdict",
    "evidence_parse",
    "fingerprint_digest",
    "score_features",
]
