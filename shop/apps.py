from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ShopConfig(AppConfig):
    name = "shop"
    verbose_name = _("Shop")

    def ready(self) -> None:
        from . import profile

        profile.connect_invalidation()
