"""The operators' and support admins' groups hold every permission they name after a
migrate, and again after a transactional test's flush (which empties the tables and
re-emits post_migrate for every app): groups_ensure acts only on the apps its groups
name, so skipping the others must not leave a group short."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from releases.permissions import GROUP_PERMISSIONS


def _held(name: str) -> set[str]:
    group = Group.objects.get(name=name)
    return {
        f"{app}.{codename}"
        for app, codename in group.permissions.values_list("content_type__app_label", "codename")
    }


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("run", [1, 2])  # the second runs after the first's flush
def test_groups_hold_every_permission_they_name(run: int) -> None:
    for name, perms in GROUP_PERMISSIONS.items():
        assert _held(name) == set(perms), name
