from django.apps import AppConfig


class TierdeskConfig(AppConfig):
    """The project itself as an app, so its system checks are registered."""

    name = "config"
    label = "tierdesk_config"
    verbose_name = "Tierdesk"

    def ready(self) -> None:
        from config import checks  # noqa: F401  (registers the safe-default checks)
