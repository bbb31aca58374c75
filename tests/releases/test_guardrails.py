"""The guardrails' arithmetic and statistics on synthetic windows (no database).

The windows are built from known latency lists and counts, so each test states
exactly what the candidate and the stable release did.
"""

from __future__ import annotations

import math
import random

from releases.guardrails import (
    BREACH,
    CONFIRMED,
    INSUFFICIENT,
    PASS,
    STRONG,
    Check,
    Fired,
    GuardSettings,
    evaluate,
    planned_evaluations,
    rule_step,
    status_at,
    streaks_update,
)
from releases.metrics import HIST_SIZE, Window, hist_above, hist_add, hist_quantile
from releases.stats import two_proportion_worse
from tests.releases.conftest import GUARD_CFG

CFG = GUARD_CFG


def window(
    latencies: list[float], *, errors: int = 0, ratings: int = 0, satisfied: int = 0
) -> Window:
    w = Window(replies=len(latencies), errors=errors, ratings=ratings, satisfied=satisfied)
    hist = [0] * HIST_SIZE
    for ms in latencies:
        hist = hist_add(hist, ms)
    w.hist = hist
    return w


def lognormal(rng: random.Random, n: int, median_ms: float) -> list[float]:
    return [median_ms * math.exp(rng.gauss(0, 0.5)) for _ in range(n)]


def run(cand: Window, stable: Window, *, cfg: GuardSettings = CFG) -> dict[str, str]:
    result = evaluate(
        candidate=cand,
        stable=stable,
        candidate_tiers={"L1": cand},
        stable_tiers={"L1": stable},
        candidate_csat=cand,
        stable_csat=stable,
        cfg=cfg,
    )
    return {c.name: c.status for c in result.checks}


def test_z_test_matches_the_textbook_value() -> None:
    # 30/1000 vs 10/1000: pooled 0.02, se 0.00626, continuity correction 0.001,
    # z = (0.03 - 0.01 - 0.001) / 0.00626 = 3.035, one-sided p 0.0012.
    t = two_proportion_worse(bad_c=30, n_c=1000, bad_s=10, n_s=1000)
    assert math.isclose(t.z, 3.0347, abs_tol=0.001)
    assert math.isclose(t.p_value, 0.001204, abs_tol=0.00002)
    # Better than stable, or within the correction: no evidence at all.
    assert two_proportion_worse(bad_c=10, n_c=1000, bad_s=30, n_s=1000).p_value > 0.5
    assert two_proportion_worse(bad_c=0, n_c=500, bad_s=0, n_s=500).p_value == 1.0


def test_histogram_percentiles_are_within_a_bucket() -> None:
    rng = random.Random(1)
    values = sorted(lognormal(rng, 5000, 300))
    w = window(values)
    exact95 = values[int(0.95 * len(values))]
    assert abs((w.p(0.95) or 0) - exact95) / exact95 < 0.1
    assert abs((hist_quantile(w.hist, 0.5) or 0) - values[2500]) / values[2500] < 0.1
    above = sum(v > 500 for v in values)
    assert abs(hist_above(w.hist, 500) - above) / above < 0.1


def test_latency_regression_trips_and_equal_latency_passes() -> None:
    rng = random.Random(2)
    stable = window(lognormal(rng, 2000, 300))
    slower = window(lognormal(rng, 400, 300 * 1.3))  # p95 +30%
    same = window(lognormal(rng, 400, 300))
    assert run(slower, stable)["latency:all"] == BREACH
    assert run(same, stable)["latency:all"] == PASS


def test_a_small_slowdown_below_the_margin_does_not_trip() -> None:
    rng = random.Random(3)
    stable = window(lognormal(rng, 5000, 300))
    # +5% everywhere: real but under the +15% line, even with lots of data.
    assert run(window(lognormal(rng, 5000, 315)), stable)["latency:all"] == PASS


def test_sparse_data_never_trips() -> None:
    rng = random.Random(4)
    stable = window(lognormal(rng, 2000, 300), errors=2, ratings=500, satisfied=450)
    # Ten times slower, every reply failed and every rating unhappy, but only 20 replies
    # and 10 ratings: below the minimum sample, so every check says "not enough data".
    awful = window(lognormal(rng, 20, 3000), errors=20, ratings=10, satisfied=0)
    statuses = run(awful, stable)
    assert set(statuses.values()) == {INSUFFICIENT}


def test_error_and_csat_margins_and_significance() -> None:
    rng = random.Random(5)
    base = lognormal(rng, 4000, 300)
    stable = window(base, errors=4, ratings=2000, satisfied=1720)  # 0.1% errors, CSAT 86%
    # +1.4 pp errors on 1000 replies: significant and over the margin.
    assert run(window(base[:1000], errors=15), stable)["errors"] == BREACH
    # +0.3 pp: under the 0.5 pp margin.
    assert run(window(base[:1000], errors=4), stable)["errors"] == PASS
    # CSAT 78% vs 86% on 400 ratings: -8 pp, significant.
    assert run(window(base[:1000], ratings=400, satisfied=312), stable)["csat"] == BREACH
    # CSAT 85% vs 86%: under the 2 pp margin.
    assert run(window(base[:1000], ratings=400, satisfied=340), stable)["csat"] == PASS
    # -3 pp but on 100 ratings: over the margin, not significant at alpha 0.01.
    assert run(window(base[:1000], ratings=100, satisfied=83), stable)["csat"] == PASS


def test_false_rollback_rate_under_equal_variants_is_below_alpha() -> None:
    """500 evaluations of two identical variants at the minimum sample: the share of
    evaluations with any breach stays near alpha, never near the old "compare two
    numbers" behaviour (where about half of them would look worse)."""
    rng = random.Random(6)
    breaches = 0
    for _ in range(500):
        stable = window(
            lognormal(rng, 800, 300),
            errors=sum(rng.random() < 0.01 for _ in range(800)),
            ratings=300,
            satisfied=sum(rng.random() < 0.86 for _ in range(300)),
        )
        cand = window(
            lognormal(rng, 200, 300),
            errors=sum(rng.random() < 0.01 for _ in range(200)),
            ratings=100,
            satisfied=sum(rng.random() < 0.86 for _ in range(100)),
        )
        if BREACH in run(cand, stable).values():
            breaches += 1
    print(f"\nfalse-alarm rate of one evaluation on identical variants: {breaches / 500:.3f}")
    assert breaches / 500 <= 0.03


def test_per_tier_latency_catches_a_regression_the_mix_hides() -> None:
    rng = random.Random(7)
    # L3 replies are slow and decide the overall p95; the candidate's L1 got 2x slower.
    stable_l1, stable_l3 = lognormal(rng, 1700, 250), lognormal(rng, 300, 2500)
    cand_l1, cand_l3 = lognormal(rng, 1700, 500), lognormal(rng, 300, 2500)
    result = evaluate(
        candidate=window(cand_l1 + cand_l3),
        stable=window(stable_l1 + stable_l3),
        candidate_tiers={"L1": window(cand_l1), "L3": window(cand_l3)},
        stable_tiers={"L1": window(stable_l1), "L3": window(stable_l3)},
        candidate_csat=Window(),
        stable_csat=Window(),
        cfg=CFG,
    )
    statuses = {c.name: c.status for c in result.checks}
    assert statuses["latency:L1"] == BREACH
    assert statuses["latency:L3"] == PASS
    assert statuses["latency:all"] == PASS  # the mix-weighted p95 alone would miss it
    assert statuses["csat"] == INSUFFICIENT


def test_streaks_count_breaches_until_a_pass_with_data() -> None:
    s = streaks_update({}, {"latency:all": BREACH, "errors": PASS})
    assert s == {"latency:all": 1}
    # Not enough latency data this time: no evidence either way, the breach stays.
    s = streaks_update(s, {"latency:all": INSUFFICIENT, "errors": PASS, "csat": PASS})
    assert s == {"latency:all": 1}
    # A check missing altogether (no replies in that tier) changes nothing either.
    s = streaks_update(s, {"errors": PASS})
    assert s == {"latency:all": 1}
    s = streaks_update(s, {"latency:all": BREACH, "latency:L1": BREACH})
    assert s == {"latency:all": 2, "latency:L1": 1}
    # A pass with data clears that check only.
    assert streaks_update(s, {"latency:all": PASS, "latency:L1": INSUFFICIENT}) == {"latency:L1": 1}
    # Another check's breach does not add to this one's streak.
    assert streaks_update({"csat": 1}, {"errors": BREACH}) == {"csat": 1, "errors": 1}


def test_status_at_a_stricter_alpha_comes_from_the_same_numbers() -> None:
    weak = Check("errors", BREACH, p_value=0.004, alpha=0.01, margin=True)
    assert status_at(weak, 1.0) == BREACH and status_at(weak, 1 / 1080) == PASS
    strong = Check("errors", BREACH, p_value=1e-9, alpha=0.01, margin=True)
    assert status_at(strong, 1 / 1080) == BREACH
    # Significant but below the margin (e.g. +0.3 pp errors): never a breach.
    small = Check("errors", PASS, p_value=1e-9, alpha=0.01, margin=False)
    assert status_at(small, 1 / 1080) == PASS
    # The latency checks' Bonferroni share stays: alpha is theirs, scaled.
    tier = Check("latency:L1", BREACH, p_value=2e-6, alpha=0.0025, margin=True)
    assert status_at(tier, 1 / 1080) == BREACH and status_at(tier, 1 / 2000) == PASS
    assert status_at(Check("csat", INSUFFICIENT), 0.001) == INSUFFICIENT


def test_planned_evaluations_count_the_beats_to_the_planned_promotion() -> None:
    production = dict(start_weight=10, step_pct=5, step_interval_min=120, hold_min=120)
    # 10% -> 50% in 8 steps of 2 h, held 2 h: 18 h of one-minute beats.
    assert planned_evaluations(max_weight=50, tick_s=60, **production) == 1080
    # tests/releases/test_simulation.py: ceiling 20%, 2 steps + the hold = 6 h.
    assert planned_evaluations(max_weight=20, tick_s=60, **production) == 360
    assert planned_evaluations(max_weight=10, tick_s=30, **production) == 240


def rule(
    waiting: dict[str, str],
    streaks: dict[str, int],
    statuses: dict[str, str],
    *,
    strict: dict[str, str] | None = None,
    confirmations: dict[str, str] | None = None,
) -> tuple[dict[str, str], dict[str, int], Fired | None]:
    return rule_step(
        waiting=waiting,
        streaks=streaks,
        now_key="m",
        statuses=statuses,
        strict=strict or {},
        confirmations=confirmations or {},
        needed=2,
    )


def test_rule_strong_evidence_twice_among_the_evaluations_with_data() -> None:
    both = {"latency:all": BREACH}
    w, s, fired = rule({}, {}, both, strict=both)
    assert (w, s, fired) == ({"latency:all": "m"}, {"latency:all": 1}, None)
    # No sample: neither counts nor resets; the waiting breach has no later data yet.
    w, s, fired = rule(w, s, {"latency:all": INSUFFICIENT}, strict={"latency:all": INSUFFICIENT})
    assert (w, s, fired) == ({"latency:all": "m"}, {"latency:all": 1}, None)
    assert rule(w, s, both, strict=both)[2] == Fired("latency:all", STRONG)
    # A breach at alpha that is not strong breaks the strong streak.
    w, s, fired = rule(w, s, both, strict={"latency:all": PASS})
    assert s == {} and fired is None and w == {"latency:all": "m"}


def test_rule_a_breach_at_alpha_needs_its_confirmation_on_later_data() -> None:
    w, s, fired = rule({}, {}, {"errors": BREACH})
    assert (w, s, fired) == ({"errors": "m"}, {}, None)
    # Overlapping windows breaching again, the later minutes without the sample: waits,
    # from the first breach's minute.
    w2, _, fired = rule({"errors": "t0"}, {}, {"errors": BREACH}, confirmations={})
    assert w2 == {"errors": "t0"} and fired is None
    # The later minutes pass: cleared (and a breach at this beat starts a new wait).
    assert rule({"errors": "t0"}, {}, {"errors": PASS}, confirmations={"errors": PASS})[0] == {}
    w3, _, _ = rule({"errors": "t0"}, {}, {"errors": BREACH}, confirmations={"errors": PASS})
    assert w3 == {"errors": "m"}
    # The later minutes breach: confirmed, whatever this beat's window says.
    fired = rule({"errors": "t0"}, {}, {"errors": PASS}, confirmations={"errors": BREACH})[2]
    assert fired == Fired("errors", CONFIRMED)
    # Checks wait independently.
    w4, _, fired = rule(
        {"errors": "t0"}, {}, {"csat": BREACH}, confirmations={"errors": INSUFFICIENT}
    )
    assert w4 == {"errors": "t0", "csat": "m"} and fired is None
