from django.apps import AppConfig
from django.db.models.signals import post_migrate


class RoutingConfig(AppConfig):
    name = "routing"
    verbose_name = "Routing"

    def ready(self) -> None:
        from routing.releases.permissions import groups_ensure

        # Every app's post_migrate, not only ours: knowledge's permissions exist only
        # after its own migrate (routing.releases.permissions).
        post_migrate.connect(groups_ensure, dispatch_uid="routing_groups_ensure")
