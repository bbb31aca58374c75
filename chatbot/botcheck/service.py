"""Per-connection bot check: the nonce, the binding check, and the shop's policy.

Pure and synchronous (no I/O): the consumer calls it on the event loop, and the bench
(bench/bot.py) times exactly this. Storing the verdict is ``store.py``'s job.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from django.conf import settings

from .digest import fingerprint_digest
from .features import N_FEATURES, Features
from .score import score_features

Mode = Literal["off", "monitor", "challenge", "enforce"]
Action = Literal["allow", "challenge", "refuse", "refuse_connection"]
MODES: tuple[Mode, ...] = ("off", "monitor", "challenge", "enforce")
WIRE_VERSION = 1
_MAX_FEATURE = 2_000_000_000


class EvidenceError(ValueError):
    """The ``bot`` field of a message frame is malformed."""


@dataclass(frozen=True)
class Evidence:
    """What the widget sends with each message: ``{"v", "seq", "f", "fp"}``."""

    seq: int
    features: tuple[int, ...]
    digest: str
    signed_text: str  # the text exactly as sent, before the protocol trims it


def evidence_parse(raw: Any, *, signed_text: str) -> Evidence:
    if not isinstance(raw, dict):
        raise EvidenceError("field 'bot' must be an object")
    if raw.get("v") != WIRE_VERSION:
        raise EvidenceError(f"field 'bot.v' must be {WIRE_VERSION}")
    seq = raw.get("seq")
    if isinstance(seq, bool) or not isinstance(seq, int) or not 0 < seq < 2**32:
        raise EvidenceError("field 'bot.seq' must be a positive integer")
    values = raw.get("f")
    if (
        not isinstance(values, list)
        or len(values) != N_FEATURES
        or not all(
            isinstance(v, int) and not isinstance(v, bool) and abs(v) <= _MAX_FEATURE
            for v in values
        )
    ):
        raise EvidenceError(f"field 'bot.f' must be {N_FEATURES} integers")
    digest = raw.get("fp")
    if not isinstance(digest, str) or len(digest) != 16:
        raise EvidenceError("field 'bot.fp' must be 16 hex digits")
    return Evidence(seq=seq, features=tuple(values), digest=digest.lower(), signed_text=signed_text)


@dataclass(frozen=True)
class Verdict:
    action: Action
    # "ok", "missing", "binding", "replay", "suspect", "bot"
    reason: str
    score: float | None = None
    signals: tuple[str, ...] = ()
    features: dict[str, float] = field(default_factory=dict)

    @property
    def allowed(self) -> bool:
        return self.action == "allow"


def _mode() -> Mode:
    # Settings already refuse other values at start-up; a test override may not.
    mode = str(settings.TIERDESK_BOTCHECK)
    return cast(Mode, mode) if mode in MODES else "enforce"


@dataclass
class BotSession:
    """One WebSocket connection's state: its nonce and the last sequence number seen."""

    mode: Mode
    nonce: bytes
    last_seq: int = 0

    @classmethod
    def open(cls, mode: Mode | None = None) -> BotSession:
        # A fresh random nonce per connection: a fingerprint computed for one
        # connection never verifies on another, whatever session key it resumes.
        return cls(mode=mode or _mode(), nonce=secrets.token_bytes(16))

    @property
    def enabled(self) -> bool:
        return self.mode != "off"

    def hello(self) -> dict[str, Any] | None:
        """The ``botcheck`` field of the hello frame (null when the shop turned it off)."""
        if not self.enabled:
            return None
        return {"nonce": self.nonce.hex(), "mode": self.mode, "version": WIRE_VERSION}

    def check(self, evidence: Evidence | None, *, text: str) -> Verdict:
        if not self.enabled:
            return Verdict(action="allow", reason="off")
        verdict = self._judge(evidence, text=text)
        if self.mode == "monitor" and verdict.action != "allow":
            # Monitor: score and store everything, refuse nothing.
            return Verdict(
                action="allow",
                reason=f"monitor:{verdict.reason}",
                score=verdict.score,
                signals=verdict.signals,
                features=verdict.features,
            )
        return verdict

    def _judge(self, evidence: Evidence | None, *, text: str) -> Verdict:
        if evidence is None:
            # No widget, no fingerprint: a raw WebSocket client.
            return Verdict(action="refuse_connection", reason="missing")
        expected = fingerprint_digest(
            nonce=self.nonce,
            seq=evidence.seq,
            features=evidence.features,
            text=evidence.signed_text,
        )
        if not hmac.compare_digest(expected, evidence.digest):
            return Verdict(action="refuse", reason="binding")
        if evidence.seq <= self.last_seq:
            # The same frame again (or an older one): a replay within this connection.
            return Verdict(action="refuse", reason="replay")
        self.last_seq = evidence.seq
        features = Features.from_milli(evidence.features)
        score = score_features(features, text_length=len(text))
        thresholds = (
            float(settings.TIERDESK_BOTCHECK_REFUSE_AT),
            float(settings.TIERDESK_BOTCHECK_CHALLENGE_AT),
        )
        refuse_at, challenge_at = thresholds
        if score.value >= refuse_at:
            # "challenge" mode never refuses on a score alone: it asks instead.
            action: Action = "refuse" if self.mode == "enforce" else "challenge"
            reason = "bot"
        elif score.value >= challenge_at:
            action, reason = "challenge", "suspect"
        else:
            action, reason = "allow", "ok"
        return Verdict(
            action=action,
            reason=reason,
            score=score.value,
            signals=score.signals,
            features=features.as_dict(),
        )
