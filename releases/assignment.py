"""Sticky assignment: which release serves a session.

A session hashes into one of 100 buckets; buckets below the candidate's weight get
the candidate. Raising the weight from 10 to 15 therefore moves exactly buckets
10..14 and nobody else, and a session keeps its variant while the weight only rises.
The hash is salted with the candidate's id, so each release samples different
shoppers instead of the same unlucky 10% every time.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db.models import Q
from django.utils.translation import gettext_noop

from .config import ReleaseConfig, config_parse
from .models import CANDIDATE, STABLE, Release

logger = logging.getLogger(__name__)

BUCKETS = 100
BASELINE_NAME = "baseline"


@dataclass(frozen=True)
class Assignment:
    release_id: int | None
    release_name: str
    variant: str
    bucket: int | None
    config: ReleaseConfig


def session_bucket(*, session: str, salt: str) -> int:
    """0..99, uniform and stable for a session (sha256, not Python's salted hash())."""
    digest = hashlib.sha256(f"{salt}\x00{session}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % BUCKETS


def bucket_salt(release_id: int) -> str:
    return f"release:{release_id}"


def variant_for(*, bucket: int, weight: int) -> str:
    return CANDIDATE if bucket < weight else STABLE


def buckets_moved(*, before: int, after: int) -> range:
    """The buckets a weight change moves (to the candidate when raised)."""
    return range(min(before, after), max(before, after))


_config_lock = threading.Lock()
# (release id, updated_at) -> parsed config: parsing is cheap, but it runs every turn.
_configs: dict[tuple[int, str], ReleaseConfig] = {}


def _config(release: Release) -> ReleaseConfig:
    key = (release.pk, release.updated_at.isoformat())
    with _config_lock:
        cached = _configs.get(key)
    if cached is not None:
        return cached
    try:
        parsed = config_parse(release.config, check_roles=False)
    except ValidationError:
        # Saved configs are validated; a hand-edited row must not break every turn.
        logger.exception("release %s has an invalid config; using the settings", release.name)
        parsed = ReleaseConfig()
    with _config_lock:
        if len(_configs) > 64:
            _configs.clear()
        _configs[key] = parsed
    return parsed


def release_assign(*, session: str) -> Assignment:
    """The release and variant for one turn of ``session`` (a conversation's public id).

    One small indexed query per turn, no cache: a weight change or a rollback applies
    to the very next turn in every process.
    """
    rows = list(Release.objects.filter(Q(is_stable=True) | Q(status=Release.Status.RUNNING)))
    stable = next((r for r in rows if r.is_stable), None)
    candidate = next((r for r in rows if r.status == Release.Status.RUNNING), None)
    if stable is None:
        stable = baseline_ensure()
    if candidate is not None and candidate.weight > 0:
        bucket = session_bucket(session=session, salt=bucket_salt(candidate.pk))
        if variant_for(bucket=bucket, weight=candidate.weight) == CANDIDATE:
            return Assignment(candidate.pk, candidate.name, CANDIDATE, bucket, _config(candidate))
        return Assignment(stable.pk, stable.name, STABLE, bucket, _config(stable))
    return Assignment(stable.pk, stable.name, STABLE, None, _config(stable))


# Stored in the row in English (the msgid); the console and the admin translate it
# where they show it.
BASELINE_DESCRIPTION = gettext_noop("The settings as deployed (created automatically).")


def baseline_ensure() -> Release:
    """The stable release when none exists yet: the process settings, as they are."""
    from django.db import IntegrityError, transaction

    try:
        with transaction.atomic():
            release, _ = Release.objects.get_or_create(
                name=BASELINE_NAME,
                defaults={
                    "description": BASELINE_DESCRIPTION,
                    "status": Release.Status.PROMOTED,
                    "is_stable": True,
                    "weight": 100,
                },
            )
    except IntegrityError:
        # Another process created a stable release at the same moment.
        return Release.objects.get(is_stable=True)
    return release
