"""Issue #18 items 9 and 10 in headless Chromium against a real Daphne
(rough_edges_e2e.mjs): a reload keeps a pending confirmation's Yes/No, and a page on a
refused origin gets a widget that stops and says why instead of "Reconnecting…"."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from .live import LiveServer, node_scenario

pytestmark = pytest.mark.browser

SCRIPT = Path(__file__).with_name("rough_edges_e2e.mjs")


def scenario(node: str, server: LiveServer, name: str, *args: str) -> dict[str, Any]:
    return node_scenario(node, SCRIPT, server, name, *args)


def test_reload_keeps_the_yes_no_of_a_pending_confirmation(
    browser_tools: str, daphne_server: LiveServer
) -> None:
    result = scenario(browser_tools, daphne_server, "reload")
    assert result["before"] == ["Yes", "No"], result
    assert result["after"] == ["Yes", "No"], result
    assert "#W5918442" in result["reply"]
    assert result["after_click"] == 0  # answered: the buttons go


@pytest.fixture
def foreign_page(daphne_server: LiveServer) -> Iterator[str]:
    """Another shop's page on 127.0.0.2 (not in TIERDESK_WIDGET_ORIGINS), embedding the
    widget from the live server and pointing it at the live server's socket."""
    base = daphne_server.url
    html = (
        '<!doctype html><html lang="en"><head>'
        f'<script src="{base}/static/tierdesk/widget.js" defer></script></head>'
        f'<body><tierdesk-chat open endpoint="{base}/ws/chat/"></tierdesk-chat></body></html>'
    ).encode()

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/" else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            if self.path == "/":
                self.wfile.write(html)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.2", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.2:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_a_refused_origin_stops_the_widget_with_a_reason(
    browser_tools: str, daphne_server: LiveServer, foreign_page: str
) -> None:
    result = scenario(browser_tools, daphne_server, "refused", "--page", foreign_page)
    origin = foreign_page.rstrip("/")
    assert result["state"] == "refused"
    assert result["status"] == "Chat isn't available on this page."
    errors = [line for line in result["console"] if "refused the connection" in line]
    assert len(errors) == 1, result["console"]  # once: no retry loop
    assert origin in errors[0] and "TIERDESK_WIDGET_ORIGINS" in errors[0]
    log = daphne_server.log.read_text(errors="replace")
    assert f"origin {origin} is not in TIERDESK_WIDGET_ORIGINS" in log
