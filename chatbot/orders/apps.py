from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class OrdersConfig(AppConfig):
    name = "chatbot.orders"
    label = "orders"
    verbose_name = _("Demo shop orders")

    def ready(self) -> None:
        from django.test.signals import setting_changed

        from .backends import order_service_reset

        # override_settings(ORDER_SERVICE=...) in a test must take effect at once,
        # not after the process-wide cached service happens to be rebuilt.
        setting_changed.connect(order_service_reset, dispatch_uid="orders.order_service_reset")
