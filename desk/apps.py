from django.apps import AppConfig
from django.db.models.signals import post_migrate


class DeskConfig(AppConfig):
    name = "desk"
    verbose_name = "Agent desk"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from .permissions import agents_group_ensure

        post_migrate.connect(agents_group_ensure, sender=self)
