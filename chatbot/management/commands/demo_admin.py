"""Create the demo support admin (admin / admin) in development only."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Create the demo admin user admin/admin (development only)."

    def handle(self, *args: Any, **options: Any) -> None:
        if settings.TIERDESK_ENV != "development":
            raise CommandError("demo_admin only runs with TIERDESK_ENV=development")
        user_model = get_user_model()
        if not user_model.objects.filter(username="admin").exists():
            user_model.objects.create_superuser("admin", "admin@example.com", "admin")
            self.stdout.write("created demo admin: admin / admin")
