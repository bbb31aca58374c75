from django.apps import AppConfig
from django.db.models.signals import post_migrate
from django.utils.translation import gettext_lazy as _


class ReleasesConfig(AppConfig):
    name = "releases"
    verbose_name = _("Gray release")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from releases import metrics, prom
        from releases.permissions import groups_ensure

        # Prometheus counts every recorded reply and rating (metrics calls its observers).
        if prom.reply_observe not in metrics.OBSERVERS.reply:
            metrics.OBSERVERS.reply.append(prom.reply_observe)
            metrics.OBSERVERS.rating.append(prom.rating_observe)

        # Every app's post_migrate, not only ours: knowledge's permissions exist only
        # after its own migrate; groups_ensure acts on the apps its groups name.
        post_migrate.connect(groups_ensure, dispatch_uid="releases_groups_ensure")
