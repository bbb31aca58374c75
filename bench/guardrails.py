"""Guardrail rollback rules, measured: whole gray releases simulated beat by beat.

    .venv/bin/python -m bench.guardrails     # writes bench/results/guardrails.json

Pure simulation, no database and no server: per-minute traffic for both variants
(Poisson arrivals with a daily swing, candidate share = the schedule's weight, a tier
mix, lognormal first-chunk latencies, errors and ratings) goes into the release
metrics' own histograms (``releases.metrics``); every beat reads sliding
windows the way ``decisions.release_evaluate`` does (the minutes ``now - window`` ..
``now``, never before the start) and runs the production ``guardrails.evaluate``.

One trace of checks per seeded run (status, p-value and margin, so a rule can apply a
stricter alpha to the same numbers; and, on demand, the checks on the minutes after a
given one, for a confirmation on data an earlier breach did not see); every rollback
rule then walks the same trace (a rule only changes what happens after it fires, so the
trace up to its first rollback is the same for all of them). The chosen rule runs the
production ``releases.guardrails.rule_step``. Reported per rule and regime:

- regressions (+15%, +30%, +200% p95 on the regressed tiers): beats, minutes and the
  candidate's weight at rollback (p50/p90 over runs), and the share of runs that were
  never rolled back (escaped: promoted, or still running at the cap);
- identical variants: the release runs to promotion; the false-rollback rate per
  release (runs rolled back) and per evaluation (rollbacks / evaluations with data),
  and the share of evaluations with any breach (rule-independent).

Regimes: ``shop`` and ``busy`` use the production defaults (window 60 min, min 200
replies / 100 ratings, 10% +5% every 2 h up to 50%, 2 h hold, alpha 0.01, +15% /
+20 ms) at 40 and 150 replies a minute on average; ``test`` is the small-sample
regime of tests/releases/test_simulation.py (30 sessions every 20 minutes, a beat per
round, min 20, window 120 min, ceiling 20%).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import platform
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "guardrails.json"
REGRESSIONS = (15, 30, 200)
# The rule before issue #19, the rule of commit 0a95cea, and the rule chosen here.
OLD, STREAK, NEW = "old_consecutive2", "data_streak2", "fresh_confirm_or_strong2"
LABELS = {"old_rule": OLD, "streak_rule": STREAK, "new_rule": NEW}


def _django() -> None:
    """releases.metrics imports its model; the settings load, nothing connects."""
    os.environ.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        TIERDESK_ENV="test",
        DATABASE_URL="",
        REDIS_URL="",
        CELERY_BROKER_URL="memory://",
        TIERDESK_WARMUP_ON_START="false",
    )
    os.environ.setdefault("TIERDESK_VAR_DIR", tempfile.gettempdir())
    import django

    django.setup()


# --- the simulated release -------------------------------------------------------------


@dataclass(frozen=True)
class Tier:
    name: str
    share: float
    median_ms: float
    sigma: float = 0.5


@dataclass(frozen=True)
class Regime:
    name: str
    replies_per_min: float  # mean over the day, both variants
    daily_swing: float  # rate x (1 + swing * sin(day phase)); 0 = flat
    beat_min: int = 1
    sessions_per_beat: int = 0  # > 0: this many sessions arrive at each beat, none between
    window_min: int = 60
    csat_window_min: int = 360
    min_replies: int = 200
    min_ratings: int = 100
    alpha: float = 0.01
    start_weight: int = 10
    step_pct: int = 5
    step_interval_min: int = 120
    max_weight: int = 50
    hold_min: int = 120
    tiers: tuple[Tier, ...] = (
        Tier("L1", 0.85, 250.0),
        Tier("L2", 0.12, 900.0),
        Tier("L3", 0.03, 2500.0),
    )
    regressed: tuple[str, ...] = ("L1", "L2", "L3")
    error_rate: float = 0.01
    ratings_per_reply: float = 0.2
    satisfied: float = 0.86
    overtime_min: int = 1440  # identical runs: give up on promotion this long after the hold

    def weight(self, minute: int) -> int:
        steps = minute // self.step_interval_min
        return min(self.max_weight, self.start_weight + self.step_pct * steps)

    def weight_during(self, minute: int) -> int:
        """The weight while minute ``minute``'s traffic arrives and its beat evaluates:
        the beat steps the schedule after evaluating, for the next minute on."""
        return self.weight(max(0, minute - 1))

    @property
    def at_max_min(self) -> int:
        steps = math.ceil((self.max_weight - self.start_weight) / self.step_pct)
        return steps * self.step_interval_min

    @property
    def promote_min(self) -> int:
        return self.at_max_min + self.hold_min


REGIMES = {
    "shop": Regime("shop", replies_per_min=40, daily_swing=0.6),
    "busy": Regime("busy", replies_per_min=150, daily_swing=0.6),
    "test": Regime(
        "test",
        replies_per_min=1.5,
        daily_swing=0.0,
        beat_min=20,
        sessions_per_beat=30,
        window_min=120,
        min_replies=20,
        min_ratings=20,
        max_weight=20,
        # The test's questions: order questions and greetings go to L1 (the regressed
        # fast model), noise to the clarify template.
        tiers=(Tier("L1", 0.9, 60.0), Tier("clarify", 0.1, 20.0)),
        regressed=("L1",),
        error_rate=0.0,
        ratings_per_reply=1.2,
        satisfied=0.9,
        overtime_min=240,
    ),
}


@dataclass(frozen=True)
class Look:
    """One check at one beat: its status at the configured alpha, its p-value scaled to
    that alpha (the latency checks' Bonferroni share undone, so ``p < alpha'`` is the
    check at any other family alpha) and whether the observed difference reached the
    margin. A rule with a stricter alpha re-derives the status from these."""

    status: str
    p: float
    margin: bool

    def at(self, alpha: float) -> str:
        from releases.guardrails import BREACH, INSUFFICIENT, PASS

        if self.status == INSUFFICIENT:
            return INSUFFICIENT
        return BREACH if self.margin and self.p < alpha else PASS


@dataclass
class Beat:
    minute: int
    weight: int
    looks: dict[str, Look]
    with_data: bool  # some check had data
    # The checks on the minutes lo..now only (a confirmation on data the earlier
    # breach did not see); computed on demand.
    fresh: Callable[[int], dict[str, Look]]

    @property
    def statuses(self) -> dict[str, str]:
        return {name: look.status for name, look in self.looks.items()}


def _traffic(
    regime: Regime, minutes: int, regression_pct: float, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """Per-minute cumulative aggregates, shape (minutes + 1, ...) so a window is a
    difference. Variant 0 is stable, 1 the candidate."""
    from releases.metrics import HIST_SIZE, LATENCY_BOUNDS_MS

    bounds = np.asarray(LATENCY_BOUNDS_MS)
    n_tiers = len(regime.tiers)
    hist = np.zeros((minutes, 2, n_tiers, HIST_SIZE), dtype=np.int64)
    replies = np.zeros((minutes, 2, n_tiers), dtype=np.int64)
    errors = np.zeros((minutes, 2), dtype=np.int64)
    ratings = np.zeros((minutes, 2), dtype=np.int64)
    satisfied = np.zeros((minutes, 2), dtype=np.int64)
    phase = rng.uniform(0, 2 * math.pi)
    t = np.arange(minutes)
    share = np.array([regime.weight_during(int(m)) for m in t]) / 100
    if regime.sessions_per_beat:
        total = np.where(t % regime.beat_min == 0, regime.sessions_per_beat, 0)
        total[0] = 0
    else:
        rate = regime.replies_per_min * (
            1 + regime.daily_swing * np.sin(2 * math.pi * t / 1440 + phase)
        )
        total = rng.poisson(rate)
    cand = rng.binomial(total, share)
    per_variant = np.stack([total - cand, cand], axis=1)  # (minutes, 2)
    tier_p = np.array([x.share for x in regime.tiers])
    tier_p = tier_p / tier_p.sum()
    for v in (0, 1):
        counts = rng.multinomial(per_variant[:, v], tier_p)  # (minutes, tiers)
        replies[:, v, :] = counts
        for k, tier in enumerate(regime.tiers):
            n = int(counts[:, k].sum())
            if not n:
                continue
            scale = tier.median_ms
            if v == 1 and tier.name in regime.regressed:
                scale *= 1 + regression_pct / 100
            values = scale * np.exp(rng.normal(0.0, tier.sigma, n))
            buckets = np.searchsorted(bounds, values, side="left")  # as bisect_left
            which = np.repeat(np.arange(minutes), counts[:, k])
            flat = np.bincount(which * HIST_SIZE + buckets, minlength=minutes * HIST_SIZE)
            hist[:, v, k, :] = flat.reshape(minutes, HIST_SIZE)
        n_v = per_variant[:, v]
        errors[:, v] = rng.binomial(n_v, regime.error_rate)
        if regime.ratings_per_reply >= 1:
            ratings[:, v] = np.floor(n_v * regime.ratings_per_reply).astype(np.int64)
        else:
            ratings[:, v] = rng.binomial(n_v, regime.ratings_per_reply)
        satisfied[:, v] = rng.binomial(ratings[:, v], regime.satisfied)

    def cum(a: np.ndarray) -> np.ndarray:
        out = np.zeros((minutes + 1, *a.shape[1:]), dtype=np.int64)
        np.cumsum(a, axis=0, out=out[1:])
        return out

    return {
        "hist": cum(hist),
        "replies": cum(replies),
        "errors": cum(errors),
        "ratings": cum(ratings),
        "satisfied": cum(satisfied),
    }


def _window(
    rep: np.ndarray, err: np.ndarray, hist: np.ndarray, v: int, k: int | None = None
) -> Any:
    from releases.metrics import Window

    if k is None:
        return Window(
            replies=int(rep[v].sum()), errors=int(err[v]), hist=hist[v].sum(axis=0).tolist()
        )
    return Window(replies=int(rep[v, k]), hist=hist[v, k].tolist())


def _looks(
    regime: Regime, c: dict[str, np.ndarray], lo: int, lo_csat: int, hi: int
) -> dict[str, Look]:
    """The production ``evaluate`` on minutes lo..hi-1 (CSAT from lo_csat)."""
    from releases.guardrails import GuardSettings, evaluate
    from releases.metrics import Window

    cfg = GuardSettings(
        min_replies=regime.min_replies, min_ratings=regime.min_ratings, alpha=regime.alpha
    )
    rep = c["replies"][hi] - c["replies"][lo]  # (2, tiers)
    rat = c["ratings"][hi] - c["ratings"][lo_csat]
    if rep[1].sum() < regime.min_replies and rat[1] < regime.min_ratings:
        return {}  # nothing can have data (the candidate is the smaller variant)
    hist = c["hist"][hi] - c["hist"][lo]  # (2, tiers, HIST)
    err = c["errors"][hi] - c["errors"][lo]
    sat = c["satisfied"][hi] - c["satisfied"][lo_csat]
    names = [t.name for t in regime.tiers]
    win = functools.partial(_window, rep, err, hist)
    result = evaluate(
        candidate=win(1),
        stable=win(0),
        candidate_tiers={n: win(1, k) for k, n in enumerate(names) if rep[1, k]},
        stable_tiers={n: win(0, k) for k, n in enumerate(names) if rep[0, k]},
        candidate_csat=Window(ratings=int(rat[1]), satisfied=int(sat[1])),
        stable_csat=Window(ratings=int(rat[0]), satisfied=int(sat[0])),
        cfg=cfg,
    )
    return {
        ch.name: Look(
            ch.status,
            1.0 if ch.p_value is None or not ch.alpha else ch.p_value * regime.alpha / ch.alpha,
            ch.margin,
        )
        for ch in result.checks
    }


def simulate(regime: Regime, regression_pct: float, seed: int, minutes: int) -> Iterator[Beat]:
    """The guardrail's checks at every beat of one release, as they come (never
    stopped here: each rule decides when it would have been)."""
    from releases.guardrails import INSUFFICIENT

    rng = np.random.default_rng(seed)
    c = _traffic(regime, minutes, regression_pct, rng)
    for now in range(regime.beat_min, minutes, regime.beat_min):
        lo, hi = max(0, now - regime.window_min), now + 1  # minutes lo..now, as the service
        lo_csat = max(0, now - regime.csat_window_min)
        looks = _looks(regime, c, lo, lo_csat, hi)

        def fresh(since: int, hi: int = hi) -> dict[str, Look]:
            return _looks(regime, c, since, since, hi)

        yield Beat(
            now,
            regime.weight_during(now),
            looks,
            any(x.status != INSUFFICIENT for x in looks.values()),
            fresh,
        )


# --- the rules ---------------------------------------------------------------------------


def _healthy(statuses: dict[str, str]) -> bool:
    """Evaluation.healthy_with_data: no breach, latency:all and errors had data."""
    return (
        "breach" not in statuses.values()
        and statuses.get("latency:all", "insufficient") != "insufficient"
        and statuses.get("errors", "insufficient") != "insufficient"
    )


class Rule:
    """Walks a trace beat by beat; ``step`` names the check that rolls back, if any."""

    name = ""
    description = ""

    def reset(self, regime: Regime) -> None:
        self.regime = regime

    def step(self, beat: Beat) -> str | None:
        raise NotImplementedError

    def statuses(self, beat: Beat) -> dict[str, str]:
        """The statuses this rule sees (for promotion: healthy with data)."""
        return beat.statuses

    def pending(self) -> bool:
        """An unresolved breach (promotion waits for it)."""
        return False


def _first_breach(statuses: dict[str, str]) -> str | None:
    return next((n for n, s in sorted(statuses.items()) if s == "breach"), None)


class Consecutive(Rule):
    """The rule before issue #19: K beats with a breach in a row; any beat without one
    resets."""

    def __init__(self, k: int = 2) -> None:
        self.k = k
        self.name = f"old_consecutive{k}"
        self.description = f"{k} beats with a breach in a row; any beat without a breach resets"

    def reset(self, regime: Regime) -> None:
        super().reset(regime)
        self.streak = 0

    def step(self, beat: Beat) -> str | None:
        statuses = beat.statuses
        self.streak = self.streak + 1 if "breach" in statuses.values() else 0
        return _first_breach(statuses) if self.streak >= self.k else None


def planned_evaluations(regime: Regime) -> int:
    """The looks from the start to the planned promotion, as production counts them
    (``releases.guardrails.planned_evaluations`` with the 60-second beat; the test
    regime's settings keep that beat too, though its clock jumps 20 minutes a round)."""
    from releases.guardrails import planned_evaluations as planned

    return planned(
        start_weight=regime.start_weight,
        max_weight=regime.max_weight,
        step_pct=regime.step_pct,
        step_interval_min=regime.step_interval_min,
        hold_min=regime.hold_min,
        tick_s=60.0,
    )


def independent_windows(regime: Regime, check: str) -> int:
    """Non-overlapping windows of this check's length in the planned release."""
    window = regime.csat_window_min if check == "csat" else regime.window_min
    return max(1, math.ceil(regime.promote_min / window))


class DataStreak(Rule):
    """Per check: K breaches with no pass of that check in between; a beat where the
    check had no data neither counts nor resets (``releases.guardrails.streaks_update``,
    the rule of commit 0a95cea). ``spend``: each breach at a Bonferroni share of alpha,
    over the release's independent windows (``windows``) or its every planned
    evaluation (``evaluations``)."""

    def __init__(self, k: int = 2, spend: str = "") -> None:
        self.k, self.spend = k, spend
        self.name = f"data_streak{k}" + (f"_alpha_per_{spend[:-1]}" if spend else "")
        self.description = (
            f"{k} breaches of one check in a row among the beats where it had data; "
            "only a pass with data resets it"
            + (
                {
                    "windows": "; alpha / the planned release's non-overlapping windows",
                    "evaluations": "; alpha / the planned release's evaluations",
                }[spend]
                if spend
                else ""
            )
        )

    def reset(self, regime: Regime) -> None:
        super().reset(regime)
        self.streaks: dict[str, int] = {}

    def alpha(self, check: str) -> float:
        if self.spend == "windows":
            return self.regime.alpha / independent_windows(self.regime, check)
        if self.spend == "evaluations":
            return self.regime.alpha / planned_evaluations(self.regime)
        return self.regime.alpha

    def statuses(self, beat: Beat) -> dict[str, str]:
        if not self.spend:
            return beat.statuses
        return {n: look.at(self.alpha(n)) for n, look in beat.looks.items()}

    def step(self, beat: Beat) -> str | None:
        from releases.guardrails import streaks_update

        self.streaks = streaks_update(self.streaks, self.statuses(beat))
        fired = sorted(n for n, v in self.streaks.items() if v >= self.k)
        return fired[0] if fired else None

    def pending(self) -> bool:
        return bool(self.streaks)


class FreshConfirm(Rule):
    """A breach at alpha is confirmed or cleared by the first evaluation of that check
    on data it did not see (the minutes after it) that has the minimum sample: one
    independent look at alpha. With ``strong``: or 2 breaches in a row (among the beats
    with data) at alpha / the planned evaluations, evidence that survives every look."""

    def __init__(self, strong: bool = False, strong_k: int = 2) -> None:
        self.strong, self.strong_k = strong, strong_k
        self.name = "fresh_confirm" + (f"_or_strong{strong_k}" if strong else "")
        self.description = (
            "a breach at alpha, confirmed by one breach at alpha on the minutes after it "
            "(the first beat where they have the minimum sample; a pass there clears it)"
            + (
                f"; or {strong_k} breaches in a row among the beats with data at alpha / the "
                "planned evaluations"
                if strong
                else ""
            )
        )

    def reset(self, regime: Regime) -> None:
        super().reset(regime)
        self.waiting: dict[str, str] = {}  # check -> minute of the breach to confirm
        self.strong_streaks: dict[str, int] = {}

    def step(self, beat: Beat) -> str | None:
        """The production rule, ``releases.guardrails.rule_step``."""
        from releases.guardrails import INSUFFICIENT, rule_step

        strict: dict[str, str] = {}
        if self.strong:
            factor = 1 / planned_evaluations(self.regime)
            strict = {n: x.at(self.regime.alpha * factor) for n, x in beat.looks.items()}
        confirmations: dict[str, str] = {}
        fresh: dict[str, dict[str, Look]] = {}
        for name, since in self.waiting.items():
            if since not in fresh:
                fresh[since] = beat.fresh(int(since) + 1)
            look = fresh[since].get(name)
            confirmations[name] = look.status if look is not None else INSUFFICIENT
        self.waiting, self.strong_streaks, fired = rule_step(
            waiting=self.waiting,
            streaks=self.strong_streaks,
            now_key=str(beat.minute),
            statuses=beat.statuses,
            strict=strict,
            confirmations=confirmations,
            needed=self.strong_k,
        )
        return fired.check if fired else None

    def pending(self) -> bool:
        return bool(self.waiting) or bool(self.strong_streaks)


def rules() -> list[Rule]:
    return [
        Consecutive(2),
        DataStreak(2),
        DataStreak(2, "windows"),
        DataStreak(2, "evaluations"),
        FreshConfirm(),
        FreshConfirm(strong=True),
        FreshConfirm(strong=True, strong_k=3),
    ]


@dataclass
class Outcome:
    end: str  # rollback | promote | running
    beats: int  # beats evaluated up to and including the end
    beats_with_data: int
    minute: int
    weight: int
    check: str = ""  # the check that rolled back


class Walk:
    """One rule over one release, beat by beat, until it rolls back or promotes."""

    def __init__(self, rule: Rule, regime: Regime) -> None:
        self.rule, self.regime = rule, regime
        self.rule.reset(regime)
        self.beats = self.with_data = 0
        self.outcome: Outcome | None = None

    def feed(self, beat: Beat) -> None:
        self.beats += 1
        self.with_data += beat.with_data
        fired = self.rule.step(beat)
        if fired:
            self.outcome = Outcome(
                "rollback", self.beats, self.with_data, beat.minute, beat.weight, fired
            )
        elif (
            beat.minute >= self.regime.promote_min
            and _healthy(self.rule.statuses(beat))
            and not self.rule.pending()
        ):
            self.outcome = Outcome("promote", self.beats, self.with_data, beat.minute, beat.weight)

    def end(self, last: Beat) -> Outcome:
        return self.outcome or Outcome(
            "running", self.beats, self.with_data, last.minute, last.weight
        )


# --- runs and figures --------------------------------------------------------------------


def _job(args: tuple[Regime, float, int]) -> dict[str, Any]:
    regime, regression, seed = args
    _django()
    minutes = regime.promote_min + regime.overtime_min
    walks = [Walk(r, regime) for r in rules()]
    with_data = with_breach = 0
    latency_data: list[int] = []  # minutes of the first two beats where latency:all had data
    breached: Counter[str] = Counter()
    for beat in simulate(regime, regression, seed, minutes):
        if beat.statuses.get("latency:all", "insufficient") != "insufficient":
            latency_data = [*latency_data, beat.minute][:2]
        for w in walks:
            if w.outcome is None:
                w.feed(beat)
        with_data += beat.with_data
        names = [name for name, status in beat.statuses.items() if status == "breach"]
        with_breach += bool(names)
        breached.update(names)
        if all(w.outcome is not None for w in walks):
            break  # every rule has rolled back or promoted: the rest changes nothing
    return {
        "outcomes": {w.rule.name: asdict(w.end(beat)) for w in walks},
        "evaluations_with_data": with_data,
        "evaluations_with_breach": with_breach,
        "evaluations_with_breach_by_check": dict(breached),
        "second_latency_sample_minute": latency_data[1] if len(latency_data) > 1 else None,
    }


def pct(values: Iterable[float], q: float) -> float | None:
    ordered = sorted(values)
    if not ordered:
        return None
    return float(ordered[min(len(ordered) - 1, int(len(ordered) * q / 100))])


def summarise(runs: list[dict[str, Any]], regime: Regime) -> dict[str, Any]:
    out: dict[str, Any] = {"runs": len(runs)}
    with_data = sum(r["evaluations_with_data"] for r in runs)
    out["evaluations_with_data"] = with_data
    out["share_of_evaluations_with_a_breach"] = (
        sum(r["evaluations_with_breach"] for r in runs) / with_data if with_data else None
    )
    by_check: Counter[str] = Counter()
    for r in runs:
        by_check.update(r["evaluations_with_breach_by_check"])
    out["share_of_evaluations_with_a_breach_by_check"] = {
        name: n / with_data for name, n in sorted(by_check.items())
    }
    second = [r["second_latency_sample_minute"] for r in runs]
    out["second_latency_sample_minute_p50"] = pct((m for m in second if m is not None), 50)
    out["second_latency_sample_minute_p99"] = pct((m for m in second if m is not None), 99)
    # The test regime's ceiling: the weight steps from 15% to 20% at the beat of minute 240.
    out["latency_sample_twice_by_240min"] = sum(m is not None and m <= 240 for m in second) / len(
        runs
    )
    per_rule: dict[str, Any] = {}
    for rule in rules():
        res = [r["outcomes"][rule.name] for r in runs]
        rolled = [o for o in res if o["end"] == "rollback"]
        rule_data = sum(o["beats_with_data"] for o in res)
        per_rule[rule.name] = {
            "rolled_back": len(rolled) / len(res),
            "promoted": sum(o["end"] == "promote" for o in res) / len(res),
            # When promoted (a pending breach holds the promotion until it is resolved):
            "promoted_minute_p50": pct((o["minute"] for o in res if o["end"] == "promote"), 50),
            "promoted_minute_p90": pct((o["minute"] for o in res if o["end"] == "promote"), 90),
            "still_running_at_cap": sum(o["end"] == "running" for o in res) / len(res),
            "rollbacks_per_evaluation_with_data": len(rolled) / rule_data if rule_data else 0.0,
            # Over the runs that rolled back:
            "beats_p50": pct((o["beats"] for o in rolled), 50),
            "evaluations_with_data_p50": pct((o["beats_with_data"] for o in rolled), 50),
            "evaluations_with_data_p90": pct((o["beats_with_data"] for o in rolled), 90),
            "beats_p90": pct((o["beats"] for o in rolled), 90),
            "minutes_p50": pct((o["minute"] for o in rolled), 50),
            "minutes_p90": pct((o["minute"] for o in rolled), 90),
            "weight_p50": pct((o["weight"] for o in rolled), 50),
            "weight_p90": pct((o["weight"] for o in rolled), 90),
            "weight_max": max((o["weight"] for o in rolled), default=None),
            "rolled_back_by_check": dict(sorted(Counter(o["check"] for o in rolled).items())),
            # Paired with today's rule on the same traces:
            "rolled_back_where_old_rule_did_not": sum(
                o["end"] == "rollback" and r["outcomes"][OLD]["end"] != "rollback"
                for o, r in zip(res, runs, strict=True)
            ),
            "not_rolled_back_where_old_rule_did": sum(
                o["end"] != "rollback" and r["outcomes"][OLD]["end"] == "rollback"
                for o, r in zip(res, runs, strict=True)
            ),
            "rolled_back_where_streak_rule_did_not": sum(
                o["end"] == "rollback" and r["outcomes"][STREAK]["end"] != "rollback"
                for o, r in zip(res, runs, strict=True)
            ),
            "rolled_back_at_or_below_15pct": sum(o["weight"] <= 15 for o in rolled) / len(res),
            "rolled_back_by_360min": sum(o["minute"] <= 360 for o in rolled) / len(res),
        }
    out["rules"] = per_rule
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--regimes", default="shop,busy,test")
    parser.add_argument("--equal-runs", type=int, default=600, help="identical runs per regime")
    parser.add_argument("--regression-runs", type=int, default=150, help="runs per regression")
    parser.add_argument("--test-runs", type=int, default=3000, help="runs per case, test regime")
    parser.add_argument("--rate", type=float, default=None, help="override: replies/min (shop)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    _django()
    started, load_start, t0 = datetime.now(UTC), os.getloadavg(), time.perf_counter()

    regimes = [REGIMES[name] for name in args.regimes.split(",")]
    if args.rate is not None:
        regimes = [
            replace(r, replies_per_min=args.rate) if r.name == "shop" else r for r in regimes
        ]
    cases: list[tuple[Regime, float, int]] = []
    for regime in regimes:
        runs = args.test_runs if regime.sessions_per_beat else None
        for regression in (0, *REGRESSIONS):
            n = runs or (args.equal_runs if regression == 0 else args.regression_runs)
            base = args.seed * 1_000_003 + sum(map(ord, regime.name)) * 10_007 + regression * 101
            cases += [(regime, float(regression), base + i) for i in range(n)]
    # Longest first, so the pool ends together.
    order = sorted(range(len(cases)), key=lambda i: -cases[i][0].promote_min)
    results: list[dict[str, Any]] = [{} for _ in cases]
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        for i, res in zip(
            order, pool.map(_job, [cases[i] for i in order], chunksize=8), strict=True
        ):
            results[i] = res

    details: dict[str, Any] = {}
    for regime in regimes:
        details[regime.name] = {"settings": _regime_json(regime)}
        for regression in (0, *REGRESSIONS):
            runs = [
                results[i]
                for i, (r, g, _) in enumerate(cases)
                if r.name == regime.name and g == regression
            ]
            key = "identical" if regression == 0 else f"plus{regression}pct"
            details[regime.name][key] = summarise(runs, regime)
    report = {
        "benchmark": "guardrails",
        "timestamp": started.isoformat(timespec="seconds"),
        "command": ".venv/bin/python -m bench.guardrails",
        "seconds": round(time.perf_counter() - t0, 1),
        "machine": {
            "nproc": os.cpu_count(),
            "platform": platform.platform(),
            "loadavg_start": load_start,
            "loadavg_end": os.getloadavg(),
        },
        "rules": {r.name: r.description for r in rules()},
        "old_rule": OLD,
        "streak_rule": STREAK,
        "new_rule": NEW,
        "figures": figures(details),
        "details": details,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report["figures"], indent=2))
    print(_table(details))
    print(f"wrote {args.out} in {report['seconds']} s")
    return 0


def _regime_json(regime: Regime) -> dict[str, Any]:
    data = asdict(regime)
    data["tiers"] = [asdict(t) for t in regime.tiers]
    data["promote_at_min"] = regime.promote_min
    return data


def figures(details: dict[str, Any]) -> dict[str, float | None]:
    """The flat summary: ``{old,streak,new}_rule_<figure>_<regime>[_<regression>]`` for
    the rule before issue #19, the rule of commit 0a95cea and the rule chosen, then the
    other rules' false-rollback rates and +30% / +200% times, then what drives the
    false rollbacks (rule-independent breach shares, and which check fired)."""
    out: dict[str, float | None] = {}

    def r(x: float | None, nd: int = 4) -> float | None:
        return None if x is None else round(x, nd)

    for regime, d in details.items():
        same = d["identical"]
        out[f"identical_runs_{regime}"] = same["runs"]
        out[f"regression_runs_{regime}"] = d["plus200pct"]["runs"]
        for label, rule in LABELS.items():
            s = same["rules"][rule]
            out[f"{label}_false_rollback_per_release_{regime}"] = r(s["rolled_back"])
            out[f"{label}_false_rollback_per_1000_evaluations_with_data_{regime}"] = r(
                s["rollbacks_per_evaluation_with_data"] * 1000, 3
            )
            out[f"{label}_identical_promoted_share_{regime}"] = r(s["promoted"])
            out[f"{label}_identical_promoted_at_minute_p50_{regime}"] = s["promoted_minute_p50"]
            out[f"{label}_identical_promoted_at_minute_p90_{regime}"] = s["promoted_minute_p90"]
            for g in REGRESSIONS:
                s = d[f"plus{g}pct"]["rules"][rule]
                key = f"plus{g}pct_{regime}"
                out[f"{label}_rolled_back_share_{key}"] = r(s["rolled_back"])
                out[f"{label}_minutes_to_rollback_p50_{key}"] = s["minutes_p50"]
                out[f"{label}_minutes_to_rollback_p90_{key}"] = s["minutes_p90"]
                out[f"{label}_beats_to_rollback_p50_{key}"] = s["beats_p50"]
                out[f"{label}_beats_to_rollback_p90_{key}"] = s["beats_p90"]
                out[f"{label}_evaluations_with_data_to_rollback_p50_{key}"] = s[
                    "evaluations_with_data_p50"
                ]
                out[f"{label}_evaluations_with_data_to_rollback_p90_{key}"] = s[
                    "evaluations_with_data_p90"
                ]
                out[f"{label}_weight_at_rollback_p90_{key}"] = s["weight_p90"]
                out[f"{label}_weight_at_rollback_max_{key}"] = s["weight_max"]
            if regime == "test":
                s = d["plus200pct"]["rules"][rule]
                out[f"{label}_rolled_back_by_15pct_plus200pct_test"] = r(
                    s["rolled_back_at_or_below_15pct"]
                )
                out[f"{label}_rolled_back_by_360min_plus200pct_test"] = r(
                    s["rolled_back_by_360min"]
                )
        new = same["rules"][NEW]
        # Paired on the same traces: the new rule's false rollbacks of runs the streak
        # rule let through (a rule that only removes rollbacks has 0).
        out[f"new_rule_false_rollbacks_where_streak_rule_had_none_{regime}"] = new[
            "rolled_back_where_streak_rule_did_not"
        ]
        for rule, s in same["rules"].items():
            if rule in LABELS.values():
                continue
            out[f"{rule}_false_rollback_per_release_{regime}"] = r(s["rolled_back"])
            for g in (30, 200):
                t = d[f"plus{g}pct"]["rules"][rule]
                out[f"{rule}_minutes_to_rollback_p50_plus{g}pct_{regime}"] = t["minutes_p50"]
                out[f"{rule}_minutes_to_rollback_p90_plus{g}pct_{regime}"] = t["minutes_p90"]
        # What drives the false rollbacks: every evaluation with a breach, by check (any
        # rule), and the check that fired the old rule's false rollbacks.
        out[f"share_of_evaluations_with_a_breach_identical_{regime}"] = r(
            same["share_of_evaluations_with_a_breach"], 5
        )
        for check, share in same["share_of_evaluations_with_a_breach_by_check"].items():
            out[f"share_of_evaluations_with_a_{check}_breach_identical_{regime}"] = r(share, 5)
        for label in ("old_rule", "new_rule"):
            s = same["rules"][LABELS[label]]
            for check, n in s["rolled_back_by_check"].items():
                out[f"{label}_false_rollbacks_fired_by_{check}_{regime}"] = n
        if regime == "test":
            out["latency_sample_twice_by_240min_plus200pct_test"] = r(
                d["plus200pct"]["latency_sample_twice_by_240min"]
            )
    return out


def _table(details: dict[str, Any]) -> str:
    lines = []
    for regime, d in details.items():
        lines.append(f"\n[{regime}] identical runs: {d['identical']['runs']}")
        head = f"{'rule':30} {'false/release':>13} {'false/1k eval':>13}"
        for g in REGRESSIONS:
            head += f" {'+' + str(g) + '% beats p50/p90 data (w90) rb':>40}"
        lines.append(head)
        for rule in d["identical"]["rules"]:
            same = d["identical"]["rules"][rule]
            row = (
                f"{rule:30} {same['rolled_back']:>13.3f} "
                f"{same['rollbacks_per_evaluation_with_data'] * 1000:>13.3f}"
            )
            for g in REGRESSIONS:
                s = d[f"plus{g}pct"]["rules"][rule]
                cell = (
                    f"{s['beats_p50']}/{s['beats_p90']} "
                    f"d{s['evaluations_with_data_p50']}/{s['evaluations_with_data_p90']} "
                    f"(w{s['weight_p90']}) "
                    f"{s['rolled_back']:.2f}"
                )
                row += f" {cell:>40}"
            lines.append(row)
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
