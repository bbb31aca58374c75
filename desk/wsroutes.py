from django.urls import path

from .consumers import DeskConsumer

websocket_urlpatterns = [path("ws/desk/", DeskConsumer.as_asgi())]
