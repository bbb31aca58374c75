from django.apps import AppConfig


class ShopConfig(AppConfig):
    name = "shop"
    verbose_name = "Shop profile"

    def ready(self) -> None:
        from . import profile

        profile.connect_invalidation()
