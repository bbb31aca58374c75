"""The shop sites that embed the widget (TIERDESK_WIDGET_ORIGINS): how the setting is
read, and the WebSocket origin check that honours it (config/origin.py). CORS on
/tickets/ is tests/desk/test_ticket_cors.py; the whole embed through nginx in Chromium
is tests/browser/test_embed_nginx.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.testing import WebsocketCommunicator

from config.origin import ORIGIN_REFUSED, widget_origin_validator
from config.settings.env import ImproperlyConfiguredEnv, origin_parse

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("raw", "origin"),
    [
        ("https://Shop.Example.com/", "https://shop.example.com"),
        ("https://shop.example.com:443", "https://shop.example.com"),
        ("http://shop.localhost:8080", "http://shop.localhost:8080"),
        ("http://[::1]:8000", "http://[::1]:8000"),
    ],
)
def test_an_origin_is_kept_as_the_browser_sends_it(raw: str, origin: str) -> None:
    assert origin_parse("TIERDESK_WIDGET_ORIGINS", raw) == origin


@pytest.mark.parametrize(
    "raw",
    ["shop.example.com", "https://shop.example.com/pages", "*", "https://*.shop.com", "ftp://x.y"],
)
def test_anything_but_an_origin_is_refused_with_an_example(raw: str) -> None:
    with pytest.raises(
        ImproperlyConfiguredEnv, match=r"TIERDESK_WIDGET_ORIGINS: .* scheme://host\[:port\]"
    ):
        origin_parse("TIERDESK_WIDGET_ORIGINS", raw)


def test_a_bad_entry_stops_start_up_naming_the_setting() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIERDESK_WIDGET")}
    result = subprocess.run(
        [sys.executable, "-c", "import config.settings"],
        cwd=ROOT,
        env=env | {"TIERDESK_WIDGET_ORIGINS": "https://shop.example.com,shop.example.com"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode != 0
    assert "TIERDESK_WIDGET_ORIGINS: 'shop.example.com' is not an origin" in result.stderr


class Accept(AsyncWebsocketConsumer):
    async def connect(self) -> None:
        await self.accept()


async def handshake(origin: str) -> tuple[bool, Any]:
    """(open, close code): a refused origin is accepted, then closed at once."""
    app = widget_origin_validator(Accept.as_asgi())
    comm = WebsocketCommunicator(app, "/ws/chat/", headers=[(b"origin", origin.encode())])
    connected, _ = await comm.connect(timeout=5)
    assert connected
    if await comm.receive_nothing(timeout=0.5):
        await comm.disconnect()
        return True, None
    output = await comm.receive_output(timeout=5)
    assert output["type"] == "websocket.close"
    return False, output["code"]


# Channels closes old database connections around a handshake: the connection must be
# usable even in a run where an earlier test left one open.
@pytest.mark.django_db
async def test_websocket_admits_listed_shop_sites_and_own_hosts_only(settings: Any) -> None:
    settings.TIERDESK_WIDGET_ORIGINS = ["http://shop.localhost:8080"]
    settings.ALLOWED_HOSTS = ["chat.localhost"]
    assert (await handshake("http://shop.localhost:8080"))[0]
    # Tierdesk's own pages, any port (ALLOWED_HOSTS names hosts, not origins).
    assert (await handshake("http://chat.localhost:8443"))[0]
    # The same site on another port or scheme is another origin.
    for foreign in (
        "http://shop.localhost:9090",
        "https://shop.localhost:8080",
        "http://evil.test",
    ):
        assert await handshake(foreign) == (False, ORIGIN_REFUSED), foreign
