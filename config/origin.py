"""The WebSocket origin check, with a refusal the browser can see.

Channels' ``AllowedHostsOriginValidator`` refuses a foreign origin by closing before the
handshake: Daphne answers HTTP 403, and the browser's WebSocket API reports only close
code 1006, the same as a server that is down, so the widget retried for ever. Here the
handshake is accepted and the socket closed at once with ``ORIGIN_REFUSED`` (4403,
"403" in the application range), before any consumer, session or database is touched:
the widget gives up and says why in the console (docs/widget.md).
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlparse

from channels.security.websocket import OriginValidator
from django.conf import settings

logger = logging.getLogger(__name__)

# The close code of a refused origin (docs/protocol.md, close codes).
ORIGIN_REFUSED = 4403


class VisibleOriginValidator(OriginValidator):
    """``OriginValidator`` that closes a refused origin's socket with ``ORIGIN_REFUSED``."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> Any:
        origin = None
        for name, value in scope.get("headers", []):
            if name == b"origin":
                try:
                    origin = urlparse(value.decode("latin1"))
                except UnicodeDecodeError:
                    origin = None
        if self.valid_origin(origin):
            return await self.application(scope, receive, send)
        message = await receive()
        if message["type"] != "websocket.connect":
            return None
        # One line, no traceback: a misconfigured embed would otherwise flood the log.
        logger.warning(
            "websocket %s refused: origin %s is not in TIERDESK_WIDGET_ORIGINS"
            " (nor DJANGO_ALLOWED_HOSTS)",
            scope.get("path", ""),
            origin.geturl() if origin else "(none)",
        )
        await send({"type": "websocket.accept"})
        await send({"type": "websocket.close", "code": ORIGIN_REFUSED})
        return None


def widget_origin_validator(application: Any) -> VisibleOriginValidator:
    """Origins must be a shop site that embeds the widget (``TIERDESK_WIDGET_ORIGINS``,
    scheme, host and port) or one of ``ALLOWED_HOSTS`` (Tierdesk's own pages, any
    scheme and port, as Channels' ``AllowedHostsOriginValidator``; DEBUG adds localhost
    as Django does)."""
    allowed = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not allowed:
        allowed = ["localhost", "127.0.0.1", "[::1]"]
    return VisibleOriginValidator(application, [*allowed, *settings.TIERDESK_WIDGET_ORIGINS])
