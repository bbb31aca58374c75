"""The statistical test behind every guardrail (pure functions, no I/O).

All three guardrails compare two proportions, candidate against stable:

- error rate: replies that failed;
- CSAT: ratings that were not satisfied;
- p95 latency: replies slower than 1.15 x the stable release's p95. If the
  candidate's p95 really is 15% worse, clearly more than 5% of its replies exceed
  that line while about 5% of the stable's do. (A p95 has no simple standard error;
  this exceedance count turns it into a proportion, distribution-free.)

The test is the one-sided two-proportion z-test with pooled variance and Yates'
continuity correction: H0 "the candidate is not worse" (p_c <= p_s) against H1
"worse" (p_c > p_s); p = 1 - Phi(z),
z = (p_c - p_s - (1/n_c + 1/n_s) / 2) / sqrt(p (1 - p) (1/n_c + 1/n_s)), p pooled.
The correction keeps the test from over-rejecting on the small counts it sees most
(a handful of errors in a few hundred replies), where the normal approximation alone
raised false alarms well above alpha in tests/releases/test_guardrails.py.
A guardrail trips only when the observed difference also reaches the configured
margin (+0.5 pp errors, -2 pp CSAT, +15% p95), p is below alpha, and both variants
have the minimum sample; so a sparse window can never roll back on its own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class ZTest:
    p_candidate: float
    p_stable: float
    z: float
    p_value: float


def two_proportion_worse(*, bad_c: float, n_c: int, bad_s: float, n_s: int) -> ZTest:
    """One-sided pooled z-test that the candidate's "bad" share is higher."""
    if n_c <= 0 or n_s <= 0:
        return ZTest(0.0, 0.0, 0.0, 1.0)
    pc, ps = bad_c / n_c, bad_s / n_s
    pooled = (bad_c + bad_s) / (n_c + n_s)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n_c + 1 / n_s))
    if se == 0:
        # Both shares are 0 (or both 1): no evidence of a difference.
        return ZTest(pc, ps, 0.0, 1.0)
    correction = (1 / n_c + 1 / n_s) / 2
    z = (pc - ps - correction) / se if pc - ps > correction else min(0.0, (pc - ps) / se)
    return ZTest(pc, ps, z, 0.5 * math.erfc(z / math.sqrt(2)))
