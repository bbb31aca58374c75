"""Writes for releases: the operators' actions (create, start, weight, pause, promote,
roll back).

Every change runs in a transaction on the locked release row and writes a
``ReleaseEvent`` (who, when, why, before/after). Human actions need a reason. The
guardrails' and the schedule's decisions are in ``releases.decisions``.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from . import clock
from .assignment import baseline_ensure, buckets_moved
from .config import config_parse
from .models import Release, ReleaseEvent

logger = logging.getLogger(__name__)

_NAME = re.compile(r"[-a-zA-Z0-9_]{1,64}")
SCHEDULE_ACTOR = "system:schedule"
GUARDRAIL_ACTOR = "system:guardrail"
User = AbstractBaseUser | AnonymousUser


class ReleaseError(ValueError):
    """An action that is not allowed in the release's state; the message is for people."""


@dataclass(frozen=True)
class Actor:
    name: str
    user: Any = None

    @classmethod
    def of(cls, user: User | None, system: str = "") -> Actor:
        if user is not None and getattr(user, "is_authenticated", False):
            return cls(name=user.get_username(), user=user)
        if not system:
            raise ReleaseError("an action needs a signed-in user or a system actor")
        return cls(name=system)


def _state(release: Release) -> dict[str, Any]:
    return {
        "status": release.status,
        "weight": release.weight,
        "paused": release.paused,
        "is_stable": release.is_stable,
    }


def _audit(
    release: Release,
    *,
    actor: Actor,
    action: str,
    reason: str,
    before: dict[str, Any],
    at: datetime,
    extra: dict[str, Any] | None = None,
) -> ReleaseEvent:
    after = _state(release) | (extra or {})
    logger.info("release %s: %s by %s (%s)", release.name, action, actor.name, reason)
    return ReleaseEvent.objects.create(
        release=release,
        at=at,
        actor=actor.name,
        user=actor.user,
        action=action,
        reason=reason,
        before=before,
        after=after,
    )


def _reason(reason: str, actor: Actor) -> str:
    reason = (reason or "").strip()
    if not reason and actor.user is not None:
        raise ReleaseError("say why: every change is audited with its reason")
    return reason[:2000]


def release_lock(release_id: int) -> Release:
    try:
        return Release.objects.select_for_update().get(pk=release_id)
    except Release.DoesNotExist:
        raise ReleaseError(f"release {release_id} does not exist") from None


# --- operators' actions ------------------------------------------------------------------


def release_create(
    *, name: str, config: Any, description: str = "", user: User | None, reason: str
) -> Release:
    actor = Actor.of(user)
    reason = _reason(reason, actor)
    if not _NAME.fullmatch(name or ""):
        raise ReleaseError("a release name is letters, digits, - and _ (at most 64)")
    parsed = config_parse(config)
    now = clock.now()
    try:
        with transaction.atomic():
            release = Release.objects.create(
                name=name,
                description=description,
                config=parsed.as_json(),
                created_by=actor.user,
            )
            _audit(
                release,
                actor=actor,
                action="create",
                reason=reason,
                before={},
                at=now,
                extra={"config": release.config},
            )
    except IntegrityError:
        raise ReleaseError(f"a release named {name!r} exists already") from None
    return release


def release_edit(
    *, release_id: int, config: Any, description: str, user: User | None, reason: str
) -> Release:
    actor = Actor.of(user)
    reason = _reason(reason, actor)
    parsed = config_parse(config)
    with transaction.atomic():
        release = release_lock(release_id)
        if release.status != Release.Status.DRAFT:
            raise ReleaseError("only a draft can be edited; create a new release instead")
        before = _state(release) | {"config": release.config, "description": release.description}
        release.config = parsed.as_json()
        release.description = description
        release.save(update_fields=["config", "description", "updated_at"])
        _audit(
            release,
            actor=actor,
            action="edit",
            reason=reason,
            before=before,
            at=clock.now(),
            extra={"config": release.config, "description": description},
        )
    return release


def release_start(*, release_id: int, user: User | None, reason: str) -> Release:
    """Draft -> running candidate at the start weight (TIERDESK_RELEASE_START_WEIGHT)."""
    actor = Actor.of(user)
    reason = _reason(reason, actor)
    now = clock.now()
    baseline_ensure()
    with transaction.atomic():
        release = release_lock(release_id)
        if release.status != Release.Status.DRAFT:
            raise ReleaseError(
                f"only a draft can start (this one is {release.get_status_display()})"
            )
        if Release.objects.filter(status=Release.Status.RUNNING).exists():
            raise ReleaseError("another candidate is running: promote or roll it back first")
        config_parse(release.config)  # the roles must exist in this deployment
        before = _state(release)
        release.status = Release.Status.RUNNING
        release.max_weight = settings.TIERDESK_RELEASE_MAX_WEIGHT
        release.weight = min(settings.TIERDESK_RELEASE_START_WEIGHT, release.max_weight)
        release.started_at = release.last_step_at = now
        release.at_max_since = now if release.weight >= release.max_weight else None
        release.paused = False
        release.breach_streak = 0
        try:
            with transaction.atomic():
                release.save()
        except IntegrityError:
            raise ReleaseError("another candidate is running") from None
        _audit(release, actor=actor, action="start", reason=reason, before=before, at=now)
    return release


def release_weight_set(
    *, release_id: int, weight: int, user: User | None, reason: str, actor: str = ""
) -> Release:
    who = Actor.of(user, actor)
    reason = _reason(reason, who)
    if not 0 <= weight <= 100:
        raise ReleaseError("the weight is a percentage, 0 to 100")
    now = clock.now()
    with transaction.atomic():
        release = release_lock(release_id)
        if release.status != Release.Status.RUNNING:
            raise ReleaseError("only a running candidate has a weight to set")
        before = _state(release)
        moved = buckets_moved(before=release.weight, after=weight)
        release.weight = weight
        release.last_step_at = now
        if weight >= release.max_weight:
            release.at_max_since = release.at_max_since or now
        else:
            release.at_max_since = None
        release.save()
        _audit(
            release,
            actor=who,
            action="weight" if who.user is not None else "step",
            reason=reason,
            before=before,
            at=now,
            extra={"buckets_moved": [moved.start, moved.stop]} if len(moved) else None,
        )
    return release


def _set_paused(release_id: int, paused: bool, user: User | None, reason: str) -> Release:
    actor = Actor.of(user)
    reason = _reason(reason, actor)
    now = clock.now()
    with transaction.atomic():
        release = release_lock(release_id)
        if release.status != Release.Status.RUNNING:
            raise ReleaseError("only a running candidate can be paused or resumed")
        if release.paused == paused:
            raise ReleaseError("it is paused already" if paused else "it is not paused")
        before = _state(release)
        release.paused = paused
        if not paused:
            # The next step is a full interval after resuming, not at once.
            release.last_step_at = now
        release.save()
        _audit(
            release,
            actor=actor,
            action="pause" if paused else "resume",
            reason=reason,
            before=before,
            at=now,
        )
    return release


def release_pause(*, release_id: int, user: User | None, reason: str) -> Release:
    return _set_paused(release_id, True, user, reason)


def release_resume(*, release_id: int, user: User | None, reason: str) -> Release:
    return _set_paused(release_id, False, user, reason)


def release_promote(*, release_id: int, user: User | None, reason: str, actor: str = "") -> Release:
    """The candidate becomes the stable release for every session."""
    who = Actor.of(user, actor)
    reason = _reason(reason, who)
    now = clock.now()
    with transaction.atomic():
        release = release_lock(release_id)
        if release.status != Release.Status.RUNNING:
            raise ReleaseError("only a running candidate can be promoted")
        old = Release.objects.select_for_update().filter(is_stable=True).first()
        if old is not None:
            old_before = _state(old)
            old.is_stable = False
            old.weight = 0
            old.save(update_fields=["is_stable", "weight", "updated_at"])
            _audit(
                old,
                actor=who,
                action="superseded",
                reason=f"{release.name} promoted: {reason}",
                before=old_before,
                at=now,
            )
        before = _state(release)
        release.status = Release.Status.PROMOTED
        release.is_stable = True
        release.weight = 100
        release.finished_at = now
        release.save()
        _audit(release, actor=who, action="promote", reason=reason, before=before, at=now)
    return release


def release_rollback(
    *, release_id: int, user: User | None, reason: str, actor: str = "", freeze: bool = False
) -> Release:
    """Every session goes back to the stable release. With ``freeze`` (the guardrail),
    the candidate is first frozen at weight 0, then rolled back, in one transaction."""
    who = Actor.of(user, actor)
    reason = _reason(reason, who)
    now = clock.now()
    with transaction.atomic():
        release = release_lock(release_id)
        if release.status != Release.Status.RUNNING:
            raise ReleaseError("only a running candidate can be rolled back")
        if freeze:
            before = _state(release)
            release.status = Release.Status.FROZEN
            release.weight = 0
            release.save()
            _audit(release, actor=who, action="freeze", reason=reason, before=before, at=now)
        before = _state(release)
        release.status = Release.Status.ROLLED_BACK
        release.weight = 0
        release.finished_at = now
        release.save()
        _audit(release, actor=who, action="rollback", reason=reason, before=before, at=now)
    return release


def release_create_validated(**kwargs: Any) -> Release:
    """``release_create`` for forms: validation errors become ReleaseError."""
    try:
        return release_create(**kwargs)
    except ValidationError as exc:
        raise ReleaseError("; ".join(exc.messages)) from None
