"""The "support agents" group: who may use the desk (created by desk's migration and
re-applied after every ``migrate``, like releases/permissions.py)."""

from __future__ import annotations

from typing import Any

from chatbot.handoff import AGENTS_GROUP

AGENT_PERMISSIONS = ("use_desk", "view_auditevent", "view_note", "view_ticket")


def agents_group_ensure(**kwargs: Any) -> None:
    from django.contrib.auth.models import Group, Permission

    group, _ = Group.objects.get_or_create(name=AGENTS_GROUP)
    group.permissions.add(
        *Permission.objects.filter(content_type__app_label="desk", codename__in=AGENT_PERMISSIONS)
    )
