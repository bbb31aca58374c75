"""Create the demo users in development only: admin / admin (superuser), operator /
operator (the "operators" group: the console at /operators/), support / support
(the "support admins" group: knowledge base and intents) and agent / agent (the
"support agents" group: the agent desk at /desk/)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Create the demo users admin, operator, support and agent (development only)."

    def handle(self, *args: Any, **options: Any) -> None:
        if settings.TIERDESK_ENV != "development":
            raise CommandError("demo_admin only runs with TIERDESK_ENV=development")
        user_model = get_user_model()
        if not user_model.objects.filter(username="admin").exists():
            user_model.objects.create_superuser("admin", "admin@example.com", "admin")
            self.stdout.write("created demo admin: admin / admin")
        from django.contrib.auth.models import Group

        from releases.permissions import OPERATORS, SUPPORT_ADMINS, groups_ensure

        groups_ensure()
        for username, group in (("operator", OPERATORS), ("support", SUPPORT_ADMINS)):
            if user_model.objects.filter(username=username).exists():
                continue
            # Staff, so the admin login page lets them in; what they see is their group's.
            user = user_model.objects.create_user(username, password=username, is_staff=True)
            user.groups.add(Group.objects.get(name=group))
            self.stdout.write(f"created demo {group} user: {username} / {username}")
        # The agent desk (/desk/): the "support agents" group comes from desk's migration.
        if not user_model.objects.filter(username="agent").exists():
            agent = user_model.objects.create_user(
                "agent", password="agent", is_staff=True, first_name="Sam"
            )
            agent.groups.add(Group.objects.get(name="support agents"))
            self.stdout.write("created demo support agents user: agent / agent")
