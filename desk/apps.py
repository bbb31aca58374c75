from django.apps import AppConfig
from django.db.models.signals import post_migrate
from django.utils.translation import gettext_lazy as _


class DeskConfig(AppConfig):
    name = "desk"
    verbose_name = _("Agent desk")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from chatbot.privacy import shopper_data_register
        from releases.prom import REGISTRY

        from .permissions import agents_group_ensure
        from .privacy import DESK_DATA
        from .prom import COLLECTOR

        # Tickets hold a shopper's email and question: exported and erased with the rest.
        shopper_data_register(DESK_DATA)
        post_migrate.connect(agents_group_ensure, sender=self)
        # The handoff figures at /metrics, next to the release figures.
        if COLLECTOR not in REGISTRY._collector_to_names:
            REGISTRY.register(COLLECTOR)
