"""Sticky assignment: 100 buckets, weight changes move only the buckets they must."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest

from releases.assignment import (
    BUCKETS,
    bucket_salt,
    buckets_moved,
    release_assign,
    session_bucket,
    variant_for,
)
from releases.models import CANDIDATE, STABLE, Release

SESSIONS = [str(uuid.UUID(int=i * 7919 + 1)) for i in range(20_000)]


def test_buckets_are_uniform_and_stable() -> None:
    counts = Counter(session_bucket(session=s, salt="release:1") for s in SESSIONS)
    assert set(counts) == set(range(BUCKETS))
    # 200 expected per bucket; a binomial sd is ~14, so 4.5 sd either side.
    assert min(counts.values()) > 135 and max(counts.values()) < 265
    # The same session always lands in the same bucket (no per-process hash seed).
    assert [session_bucket(session=s, salt="release:1") for s in SESSIONS[:50]] == [
        session_bucket(session=s, salt="release:1") for s in SESSIONS[:50]
    ]


def test_raising_the_weight_moves_exactly_the_buckets_in_between() -> None:
    before = {
        s: variant_for(bucket=session_bucket(session=s, salt="r"), weight=10) for s in SESSIONS
    }
    after = {
        s: variant_for(bucket=session_bucket(session=s, salt="r"), weight=15) for s in SESSIONS
    }
    moved = {s for s in SESSIONS if before[s] != after[s]}
    # Nobody leaves the candidate when the weight rises; only buckets 10..14 join it.
    assert all(after[s] == CANDIDATE for s in SESSIONS if before[s] == CANDIDATE)
    assert {session_bucket(session=s, salt="r") for s in moved} == set(range(10, 15))
    assert list(buckets_moved(before=10, after=15)) == [10, 11, 12, 13, 14]
    share = sum(v == CANDIDATE for v in after.values()) / len(SESSIONS)
    assert 0.13 < share < 0.17


def test_each_release_samples_different_sessions() -> None:
    first = {s for s in SESSIONS if session_bucket(session=s, salt=bucket_salt(1)) < 10}
    second = {s for s in SESSIONS if session_bucket(session=s, salt=bucket_salt(2)) < 10}
    # Independent 10% samples overlap by about 1%, not by the whole 10%.
    assert len(first & second) / len(SESSIONS) < 0.02


@pytest.mark.django_db
def test_release_assign_follows_the_database_and_stays_sticky() -> None:
    # No release at all: a baseline stable release is created and serves everyone.
    only = release_assign(session=SESSIONS[0])
    assert only.variant == STABLE and only.release_name == "baseline" and only.bucket is None
    candidate = Release.objects.create(
        name="cand", status=Release.Status.RUNNING, weight=30, config={"prompt_version": "v2"}
    )
    sample = SESSIONS[:1000]
    first = {s: release_assign(session=s) for s in sample}
    on_candidate = {s for s, a in first.items() if a.variant == CANDIDATE}
    assert 0.25 < len(on_candidate) / len(sample) < 0.35
    assert all(first[s].config.prompt_version == "v2" for s in on_candidate)
    assert all(first[s].release_id == candidate.pk for s in on_candidate)
    # Raised to 40%: everyone on the candidate stays; some stable sessions join.
    Release.objects.filter(pk=candidate.pk).update(weight=40)
    second = {s: release_assign(session=s) for s in sample}
    assert all(second[s].variant == CANDIDATE for s in on_candidate)
    assert len([s for s in sample if second[s].variant == CANDIDATE]) > len(on_candidate)
    # Rolled back: everyone is on the stable release on the next turn.
    Release.objects.filter(pk=candidate.pk).update(status=Release.Status.ROLLED_BACK, weight=0)
    assert {release_assign(session=s).variant for s in sample[:200]} == {STABLE}
