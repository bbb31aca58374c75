"""ASGI entry point: HTTP through Django, WebSockets through Channels."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# Django must be set up before consumers (and their models) are imported.
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402
from django.urls import path  # noqa: E402

from chatbot import wsroutes  # noqa: E402
from config.checks import refuse_unsafe_start  # noqa: E402
from config.origin import widget_origin_validator  # noqa: E402
from desk import wsroutes as desk_wsroutes  # noqa: E402

# Daphne runs no system checks: DEBUG or a published key on a public host, or demo
# impersonation over a real shop's orders, stop the server here (config/checks.py).
refuse_unsafe_start()

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        # A refused origin is closed with 4403, which the browser can see (config/origin.py).
        "websocket": widget_origin_validator(
            URLRouter(
                [
                    # Shoppers have no Django session or user: their handshake never waits
                    # for AuthMiddleware's user lookup, which runs on Channels' one
                    # thread-sensitive thread, shared by the whole process.
                    *wsroutes.websocket_urlpatterns,
                    *[
                        path(str(route.pattern), AuthMiddlewareStack(route.callback))
                        for route in desk_wsroutes.websocket_urlpatterns
                    ],
                ]
            )
        ),
    }
)

if settings.TIERDESK_WARMUP_ON_START and not settings.TESTING:
    from chatbot.services import conversation_sweep_interrupted
    from inference.warmup import warmup_start_background
    from knowledge.multilingual import multilingual_warm
    from knowledge.text import taggers_warm
    from routing.router import router_snapshot_get

    # Replies that were streaming when a previous process died are cut off for good.
    conversation_sweep_interrupted()
    # The router's classifier trains from the database on first use: load it with the
    # models, not inside the first shopper's turn; likewise the POS taggers that L2's
    # yes/no coverage rule uses (knowledge.text.specific_nouns), and the multilingual
    # embedder that ranks Chinese passages.
    warmup_start_background(preload=[router_snapshot_get, taggers_warm, multilingual_warm])
