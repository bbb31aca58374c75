from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ChatbotConfig(AppConfig):
    name = "chatbot"
    verbose_name = _("Chat conversations")

    def ready(self) -> None:
        # An attachment's file is deleted from storage with its row (post_delete).
        from . import attachments  # noqa: F401
