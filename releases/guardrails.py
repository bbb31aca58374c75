"""The guardrails: candidate against stable, on the same minutes (pure; no I/O).

Checks, each "insufficient" (below the minimum sample: it can't trip), "pass" or
"breach" (releases/stats.py states the test):

- ``latency:<tier>`` and ``latency:all``: p95 first-chunk latency; per tier because the
  tiers differ by an order of magnitude and a mix-weighted p95 hides an L1 regression.
  Alpha is split between the latency checks that have data (Bonferroni);
- ``errors``: error rate, all tiers;
- ``csat``: share of satisfied ratings, all tiers, over its own longer window;
- ``degraded``: of the replies that planned a model, the share admission control sent
  without one (``inference.admission``): a candidate whose models are slower degrades
  more turns under the same load, which the latency checks don't see (the degraded
  replies are fast);
- ``handoffs``: share of replies that were handoff requests (turns routed to the
  ``handoff`` intent: the shopper asked for a person, or the bot offered one because
  it was stuck; ``metrics.handoff_requested``): a candidate that makes shoppers give
  up on the bot shows up here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from .metrics import Window, hist_above
from .stats import two_proportion_worse

INSUFFICIENT, PASS, BREACH = "insufficient", "pass", "breach"


@dataclass(frozen=True)
class GuardSettings:
    latency_ratio: float = 1.15
    latency_min_delta_ms: float = 20.0
    error_pp: float = 0.5
    csat_pp: float = 2.0
    degraded_pp: float = 5.0
    handoff_pp: float = 2.0
    min_replies: int = 200
    min_ratings: int = 100
    alpha: float = 0.01


@dataclass
class Check:
    name: str
    status: str
    candidate: float | None = None
    stable: float | None = None
    threshold: float | None = None
    n_candidate: int = 0
    n_stable: int = 0
    z: float | None = None
    p_value: float | None = None
    alpha: float | None = None
    # The observed difference reached the configured margin (+15% p95, +0.5 pp errors,
    # -2 pp CSAT): with p below alpha, that is a breach. Stored so a stricter alpha can
    # be applied to the same numbers (the rollback rule's strong-evidence path).
    margin: bool = False
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in asdict(self).items()}

    def line(self) -> str:
        if self.status == INSUFFICIENT:
            return f"{self.name}: not enough data ({self.note})"
        p = f"p={self.p_value:.2g}" if self.p_value is not None else ""
        return f"{self.name}: {self.note} {p} -> {self.status}"


@dataclass
class Evaluation:
    checks: list[Check] = field(default_factory=list)

    @property
    def breaches(self) -> list[Check]:
        return [c for c in self.checks if c.status == BREACH]

    def sufficient(self, name: str) -> bool:
        return any(c.name == name and c.status != INSUFFICIENT for c in self.checks)

    @property
    def healthy_with_data(self) -> bool:
        """No breach, and the overall latency and error checks had enough data."""
        return not self.breaches and self.sufficient("latency:all") and self.sufficient("errors")

    def summary(self) -> str:
        """One line for people: the breaches if any, else every check that had data,
        and the main checks still waiting for it (per-tier gaps are in the numbers)."""
        if self.breaches:
            return "; ".join(c.line() for c in self.breaches)
        main = ("latency:all", "errors", "csat")
        shown = [c for c in self.checks if c.status != INSUFFICIENT or c.name in main]
        return "; ".join(c.line() for c in shown)


def _short_of(name: str, n_c: int, n_stable: int, minimum: int, unit: str = "") -> Check | None:
    """The "not enough data" check when either variant is below its minimum sample
    (it can't trip), else None."""
    if n_c >= minimum and n_stable >= minimum:
        return None
    note = f"{n_c}/{n_stable} < {minimum}{unit}"
    return Check(name, INSUFFICIENT, n_candidate=n_c, n_stable=n_stable, note=note)


def _latency(name: str, cand: Window, stable: Window, cfg: GuardSettings, alpha: float) -> Check:
    n_c, n_s = cand.latency_n, stable.latency_n
    if short := _short_of(name, n_c, n_s, cfg.min_replies):
        return short
    s95, c95 = stable.p(0.95) or 0.0, cand.p(0.95) or 0.0
    line = max(s95 * cfg.latency_ratio, s95 + cfg.latency_min_delta_ms)
    test = two_proportion_worse(
        bad_c=hist_above(cand.hist, line), n_c=n_c, bad_s=hist_above(stable.hist, line), n_s=n_s
    )
    margin = c95 >= line
    return Check(
        name,
        BREACH if margin and test.p_value < alpha else PASS,
        candidate=c95,
        stable=s95,
        threshold=line,
        n_candidate=n_c,
        n_stable=n_s,
        z=test.z,
        p_value=test.p_value,
        alpha=alpha,
        margin=margin,
        note=(
            f"p95 {c95:.0f} ms vs {s95:.0f} ms (line {line:.0f} ms; over it "
            f"{test.p_candidate:.1%} vs {test.p_stable:.1%})"
        ),
    )


def _rate_worse(
    name: str, *, bad: tuple[int, int], n: tuple[int, int], pp: float, alpha: float, what: str
) -> Check:
    """A share that must not rise by ``pp`` points or more (candidate, stable)."""
    test = two_proportion_worse(bad_c=bad[0], n_c=n[0], bad_s=bad[1], n_s=n[1])
    delta_pp = (test.p_candidate - test.p_stable) * 100
    margin = delta_pp >= pp
    return Check(
        name,
        BREACH if margin and test.p_value < alpha else PASS,
        candidate=test.p_candidate,
        stable=test.p_stable,
        threshold=pp,
        n_candidate=n[0],
        n_stable=n[1],
        z=test.z,
        p_value=test.p_value,
        alpha=alpha,
        margin=margin,
        note=f"{what} {test.p_candidate:.2%} vs {test.p_stable:.2%} ({delta_pp:+.2f} pp)",
    )


def _errors(cand: Window, stable: Window, cfg: GuardSettings) -> Check:
    n_c, n_s = cand.replies, stable.replies
    if short := _short_of("errors", n_c, n_s, cfg.min_replies):
        return short
    return _rate_worse(
        "errors",
        bad=(cand.errors, stable.errors),
        n=(n_c, n_s),
        pp=cfg.error_pp,
        alpha=cfg.alpha,
        what="error rate",
    )


def _csat(cand: Window, stable: Window, cfg: GuardSettings) -> Check:
    n_c, n_s = cand.ratings, stable.ratings
    if short := _short_of("csat", n_c, n_s, cfg.min_ratings, unit=" ratings"):
        return short
    test = two_proportion_worse(
        bad_c=n_c - cand.satisfied, n_c=n_c, bad_s=n_s - stable.satisfied, n_s=n_s
    )
    csat_c, csat_s = 1 - test.p_candidate, 1 - test.p_stable
    drop_pp = (csat_s - csat_c) * 100
    margin = drop_pp >= cfg.csat_pp
    return Check(
        "csat",
        BREACH if margin and test.p_value < cfg.alpha else PASS,
        candidate=csat_c,
        stable=csat_s,
        threshold=cfg.csat_pp,
        n_candidate=n_c,
        n_stable=n_s,
        z=test.z,
        p_value=test.p_value,
        alpha=cfg.alpha,
        margin=margin,
        note=f"CSAT {csat_c:.1%} vs {csat_s:.1%} ({-drop_pp:+.1f} pp)",
    )


def _degraded(cand: Window, stable: Window, cfg: GuardSettings) -> Check:
    n_c, n_s = cand.model_turns, stable.model_turns
    if short := _short_of("degraded", n_c, n_s, cfg.min_replies, unit=" model turns"):
        return short
    return _rate_worse(
        "degraded",
        bad=(cand.degraded, stable.degraded),
        n=(n_c, n_s),
        pp=cfg.degraded_pp,
        alpha=cfg.alpha,
        what="degraded",
    )


def _handoffs(cand: Window, stable: Window, cfg: GuardSettings) -> Check:
    n_c, n_s = cand.replies, stable.replies
    if short := _short_of("handoffs", n_c, n_s, cfg.min_replies):
        return short
    return _rate_worse(
        "handoffs",
        bad=(cand.handoffs, stable.handoffs),
        n=(n_c, n_s),
        pp=cfg.handoff_pp,
        alpha=cfg.alpha,
        what="handoff requests",
    )


def evaluate(
    *,
    candidate: Window,
    stable: Window,
    candidate_tiers: dict[str, Window],
    stable_tiers: dict[str, Window],
    candidate_csat: Window,
    stable_csat: Window,
    cfg: GuardSettings,
) -> Evaluation:
    pairs = [("latency:all", candidate, stable)] + [
        (f"latency:{tier}", candidate_tiers[tier], stable_tiers[tier])
        for tier in sorted(set(candidate_tiers) & set(stable_tiers))
    ]
    with_data = sum(
        1 for _, c, s in pairs if c.latency_n >= cfg.min_replies and s.latency_n >= cfg.min_replies
    )
    alpha = cfg.alpha / max(1, with_data)
    checks = [_latency(name, c, s, cfg, alpha) for name, c, s in pairs]
    checks.append(_errors(candidate, stable, cfg))
    checks.append(_degraded(candidate, stable, cfg))
    checks.append(_handoffs(candidate, stable, cfg))
    checks.append(_csat(candidate_csat, stable_csat, cfg))
    return Evaluation(checks)


def streaks_update(streaks: Mapping[str, int], statuses: Mapping[str, str]) -> dict[str, int]:
    """Each check's breaches since it last passed with data, after one more evaluation.

    A breach adds one; a pass (the check had its minimum sample and was within limits)
    clears it; "not enough data", or no check of that name this time, changes nothing:
    an evaluation that could not see the metric is no evidence that it recovered.
    Only checks with a breach pending are kept.
    """
    out = dict(streaks)
    for name, status in statuses.items():
        if status == BREACH:
            out[name] = out.get(name, 0) + 1
        elif status == PASS:
            out.pop(name, None)
    return {name: n for name, n in out.items() if n > 0}


def status_at(check: Check, factor: float) -> str:
    """The check's status at ``factor`` (<= 1) times the alpha it was evaluated at, from
    the same numbers: a breach needs the margin and ``p < alpha * factor``."""
    if check.status == INSUFFICIENT or check.p_value is None or check.alpha is None:
        return check.status
    return BREACH if check.margin and check.p_value < check.alpha * factor else PASS


def planned_evaluations(
    *,
    start_weight: int,
    max_weight: int,
    step_pct: int,
    step_interval_min: int,
    hold_min: int,
    tick_s: float,
) -> int:
    """The evaluations a release takes from its start to its planned promotion: the
    looks the strong-evidence path spends alpha over (Bonferroni)."""
    steps = math.ceil(max(0, max_weight - start_weight) / step_pct) if step_pct > 0 else 0
    minutes = steps * step_interval_min + hold_min
    return max(1, math.ceil(minutes * 60 / max(1.0, tick_s)))


@dataclass(frozen=True)
class Fired:
    check: str
    path: str  # CONFIRMED: a breach confirmed on later data; STRONG: strong evidence in a row


CONFIRMED, STRONG = "confirmed", "strong"


def rule_step(
    *,
    waiting: Mapping[str, str],
    streaks: Mapping[str, int],
    now_key: str,
    statuses: Mapping[str, str],
    strict: Mapping[str, str],
    confirmations: Mapping[str, str],
    needed: int,
) -> tuple[dict[str, str], dict[str, int], Fired | None]:
    """The rollback rule after one more evaluation (pure; the state is stored per
    decision). A check rolls the candidate back when

    - STRONG: it breached at the strict alpha (alpha / the release's planned
      evaluations, ``strict``) in ``needed`` evaluations in a row among those where it
      had its sample (``streaks_update``): evidence that survives every look; or
    - CONFIRMED: it breached at alpha (``statuses``), and the first evaluation of that
      check on the minutes *after* that breach (data the breach did not see) that has the
      minimum sample (``confirmations``) breaches too: one independent look. A pass there
      clears it; no sample yet keeps it waiting.

    ``waiting`` maps a check to the key (the minute) of the breach awaiting
    confirmation; a breach of a check already waiting does not restart it.
    """
    streaks = streaks_update(streaks, strict)
    strong = sorted(name for name, n in streaks.items() if n >= needed)
    if strong:
        return dict(waiting), streaks, Fired(strong[0], STRONG)
    out = dict(waiting)
    for name in sorted(waiting):
        status = confirmations.get(name, INSUFFICIENT)
        if status == BREACH:
            return out, streaks, Fired(name, CONFIRMED)
        if status == PASS:
            del out[name]
    for name, status in sorted(statuses.items()):
        if status == BREACH and name not in out:
            out[name] = now_key
    return out, streaks, None
