from django.apps import AppConfig


class ChatbotConfig(AppConfig):
    name = "chatbot"
    verbose_name = "Conversations"
