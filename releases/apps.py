from django.apps import AppConfig
from django.db.models.signals import post_migrate


class ReleasesConfig(AppConfig):
    name = "releases"
    verbose_name = "Gray release"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from releases.permissions import groups_ensure

        # Every app's post_migrate, not only ours: knowledge's permissions exist only
        # after its own migrate (releases.permissions).
        post_migrate.connect(groups_ensure, dispatch_uid="releases_groups_ensure")
