from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class RoutingConfig(AppConfig):
    name = "routing"
    verbose_name = _("Routing")
