"""The widget embedded on a shop's own site, in the production shape: Debian's nginx runs
the shipped docs/deploy/nginx.conf in front of two Daphne processes (``--proxy-headers``,
one PostgreSQL database, the bot check enforcing) and serves the collected static files
itself; a second nginx server plays the shop and serves its page. Chromium loads the
page from ``http://shop.localhost:PORT`` and the widget from
``http://chat.localhost:PORT``: two origins (TIERDESK_WIDGET_ORIGINS lists the shop's).

A person passes the bot check, gets a streamed reply, asks for a person and sends the
ticket form (its preflight answered through nginx); the same page on an origin not in
the list is refused with a reason; a page whose bot-check module does not load says so
instead of sending messages the server would refuse.
``TIERDESK_UPDATE_SCREENSHOTS=1`` rewrites docs/widget-embedded.png.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.net import free_port

from .live import REPO, _manage, _server_database, _stop, daphne_start, server_env
from .nginx import main_conf, nginx_run, site_render

pytestmark = pytest.mark.browser

SCRIPT = Path(__file__).with_name("embed_e2e.mjs")
NODE_TIMEOUT_S = 400
SHOPPER = "james_li_5688"  # a demo shopper with orders (seed_demo)
SHOPPER_EMAIL = "james.li4495@example.com"
SCREENSHOT = REPO / "docs" / "widget-embedded.png"


@dataclass(frozen=True)
class Embed:
    shop: str  # the shop's page, origin in TIERDESK_WIDGET_ORIGINS
    foreign: str  # the same page on an origin that is not
    chat: str  # Tierdesk behind nginx
    database_url: str
    logs: list[Path]
    daphne_ports: list[int]
    nginx_dir: Path


def shop_page(chat: str, token: str) -> str:
    """What a shop's template renders: its own page, the widget from Tierdesk's host, and
    a shopper token it signed server-side (docs/identity.md)."""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Harbour Outfitters</title>
<link rel="icon" href="data:,">
<style>
  body {{ margin: 0; font: 16px/1.5 system-ui, sans-serif; color: #1d2330; background: #fbf8f3; }}
  header {{ padding: 16px 24px; background: #123c52; color: #fff; font: 700 20px system-ui; }}
  main {{ max-width: 520px; padding: 24px 40px; }}
  code {{ background: #efe9df; padding: 1px 5px; border-radius: 4px; }}
</style></head>
<body>
  <header>Harbour Outfitters</header>
  <main>
    <h1>Your account</h1>
    <p>This page is the shop's own site (<code id="origin"></code>); the chat in the
    corner comes from Tierdesk on <code>{chat}</code>, through nginx.</p>
  </main>
  <script>document.getElementById("origin").textContent = location.origin;</script>
  <script src="{chat}/static/tierdesk/widget.js" defer></script>
  <tierdesk-chat endpoint="{chat.replace("http", "ws", 1)}/ws/chat/" token="{token}"
    shopper="{SHOPPER}" lang="en"></tierdesk-chat>
</body></html>
"""


@pytest.fixture(scope="module")
def embed(tmp_path_factory: pytest.TempPathFactory, browser_tools: str) -> Iterator[Embed]:
    from chatbot.orders.identity import shopper_token_issue

    tmp = tmp_path_factory.mktemp("embed")
    port = free_port()
    shop, foreign, chat = (f"http://{name}.localhost:{port}" for name in ("shop", "other", "chat"))
    logs = [tmp / "daphne-1.log", tmp / "daphne-2.log"]
    with contextlib.ExitStack() as stack:
        database_url = stack.enter_context(_server_database(tmp, "_embed"))
        env = server_env(
            database_url,
            {
                "TIERDESK_BOTCHECK": "enforce",
                "TIERDESK_WIDGET_ORIGINS": shop,
                # Tierdesk's own host; the shop's is not in it (the widget list admits it).
                "DJANGO_ALLOWED_HOSTS": "chat.localhost,127.0.0.1,localhost",
            },
        )
        _manage(env, logs[0], "seed_demo")
        # The release step's collectstatic, into a var/ of the test's own: nginx serves it.
        var = tmp / "var"
        _manage(env | {"TIERDESK_VAR_DIR": str(var)}, logs[0], "collectstatic", "--noinput")
        daphnes = []
        for log in logs:
            proc, url = daphne_start(env, log, args=["--proxy-headers", "-v", "0"])
            stack.callback(_stop, proc)
            daphnes.append(int(url.rsplit(":", 1)[1]))
        site = tmp / "tierdesk.conf"
        site.write_text(
            site_render(
                port=port,
                server_name="chat.localhost",
                static_root=var / "static",
                upstream_ports=daphnes,
            )
        )
        pages = tmp / "shop"
        pages.mkdir()
        token = shopper_token_issue(customer_id=SHOPPER)
        (pages / "index.html").write_text(shop_page(chat, token))
        shop_server = (
            f"    server {{\n        listen 127.0.0.1:{port};\n"
            f"        server_name shop.localhost other.localhost;\n        root {pages};\n    }}"
        )
        nginx_dir = tmp / "nginx"
        stack.enter_context(nginx_run(nginx_dir, main_conf(nginx_dir, site, shop_server), port))
        yield Embed(
            shop=shop,
            foreign=foreign,
            chat=chat,
            database_url=database_url,
            logs=logs,
            daphne_ports=daphnes,
            nginx_dir=nginx_dir,
        )


def run(node: str, page: str, scenario: str, embed: Embed, *args: str) -> dict[str, Any]:
    cmd = [node, str(SCRIPT), "--page", page + "/", "--scenario", scenario, *args]
    try:
        proc = subprocess.run(
            cmd, cwd=REPO, capture_output=True, text=True, timeout=NODE_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{scenario}: node did not finish in {NODE_TIMEOUT_S}s: {exc.stdout!r}")
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    result: dict[str, Any] = json.loads(lines[-1]) if lines else {}
    if proc.returncode != 0 or not result.get("ok"):
        logs = "\n".join(p.read_text(errors="replace")[-2500:] for p in embed.logs)
        nginx = (embed.nginx_dir / "error.log").read_text(errors="replace")[-2000:]
        pytest.fail(
            f"{scenario} failed (exit {proc.returncode}): {result.get('error') or result}\n"
            f"stderr: {proc.stderr[-2000:]}\ndaphne logs:\n{logs}\nnginx error.log:\n{nginx}"
        )
    return result


def test_a_shopper_on_the_shops_own_site_chats_and_sends_a_ticket(
    browser_tools: str, embed: Embed, tmp_path: Path
) -> None:
    with psycopg.connect(embed.database_url, autocommit=True) as conn:
        conn.execute("UPDATE chatbot_agentpresence SET connections = 0")  # nobody online
    shot = tmp_path / "embedded.png"
    result = run(browser_tools, embed.shop, "embedded", embed, "--screenshot", str(shot))

    # The widget, its modules and botcheck.wasm came from Tierdesk's origin, served by
    # nginx from collectstatic's output with the CORS header.
    static = {
        r["url"].rsplit("/static/", 1)[1]: r for r in result["requests"] if "/static/" in r["url"]
    }
    for name in ("tierdesk/widget.js", "tierdesk/widget/main.js", "tierdesk/botcheck.wasm"):
        assert static[name]["status"] == 200, static
        assert static[name]["url"].startswith(embed.chat)
    assert static["tierdesk/botcheck.wasm"]["acao"] == "*"
    access = (embed.nginx_dir / "access.log").read_text()
    assert "GET /static/tierdesk/botcheck.wasm" in access

    # The socket went to chat.localhost through nginx; the bot check passed (enforce).
    assert result["sockets"] and all(
        s.startswith(embed.chat.replace("http", "ws")) for s in result["sockets"]
    )
    assert not [f for f in result["received"] if f["code"] and f["code"].startswith("bot")]
    assert result["identified"]
    order = result["order_reply"]
    assert order["last"]["type"] == "done" and order["chunks"] >= 2, order  # streamed
    assert "W2611340" in order["text"]

    # The ticket: its preflight answered through nginx for the shop's origin (the
    # browser does not show preflights to the page: nginx's log does), the POST stored.
    tickets = [r for r in result["requests"] if r["url"] == embed.chat + "/tickets/"]
    assert [(r["method"], r["status"], r["acao"]) for r in tickets] == [
        ("POST", 200, embed.shop)
    ], tickets
    for request, status in (("OPTIONS", 204), ("POST", 200)):
        line = f'"{request} /tickets/ HTTP/1.1" {status} '
        hits = [x for x in access.splitlines() if line in x]
        assert len(hits) == 1 and hits[0].endswith(f"origin={embed.shop} acao={embed.shop}"), access
    assert result["form_email"] == SHOPPER_EMAIL
    assert "We've got your question" in result["done_text"]
    with psycopg.connect(embed.database_url, autocommit=True) as conn:
        emails = conn.execute("SELECT email FROM desk_ticket").fetchall()
    assert (SHOPPER_EMAIL,) in emails
    assert not [line for line in result["console"] if line.startswith(("error", "pageerror"))]

    # Both Daphne processes answered through nginx: least_conn sends the ticket's
    # requests to the one not holding the chat socket.
    upstreams = set(re.findall(r"upstream=127\.0\.0\.1:(\d+)", access))
    assert upstreams == {str(port) for port in embed.daphne_ports}, access
    if os.environ.get("TIERDESK_UPDATE_SCREENSHOTS"):
        shutil.copyfile(shot, SCREENSHOT)


def test_a_page_on_an_origin_not_listed_is_refused_with_a_reason(
    browser_tools: str, embed: Embed
) -> None:
    result = run(browser_tools, embed.foreign, "foreign", embed)
    assert result["status"] == "Chat isn't available on this page."
    errors = [line for line in result["console"] if "refused the connection" in line]
    assert len(errors) == 1, result["console"]  # said once: no retry loop
    assert embed.foreign in errors[0] and "TIERDESK_WIDGET_ORIGINS" in errors[0]
    assert result["ticket_fetch"].startswith("TypeError"), result["ticket_fetch"]
    logs = "".join(p.read_text(errors="replace") for p in embed.logs)
    assert f"origin {embed.foreign} is not in TIERDESK_WIDGET_ORIGINS" in logs
    # Its preflight got the 403 and no CORS header, so the POST never left the browser.
    access = (embed.nginx_dir / "access.log").read_text().splitlines()
    tickets = [line for line in access if "/tickets/" in line and f"origin={embed.foreign}" in line]
    assert len(tickets) == 1 and '"OPTIONS /tickets/ HTTP/1.1" 403 ' in tickets[0], tickets
    assert tickets[0].endswith("acao=-")


def test_a_bot_check_module_that_does_not_load_is_said_not_hidden(
    browser_tools: str, embed: Embed
) -> None:
    result = run(browser_tools, embed.shop, "nowasm", embed)
    assert result["notice"].startswith("Messages can't be sent from this page")
    assert result["bubble_status"] == "refused"
    assert result["host_botcheck"] == "failed"
    # Nothing unsigned went out, so the server had nothing to refuse: the socket is open.
    assert result["state"] == "open"
    assert not [f for f in result["received"] if f["type"] == "error"]
    errors = [line for line in result["console"] if "bot-check module did not load" in line]
    assert len(errors) == 1 and "/static/tierdesk/botcheck.wasm" in errors[0], result["console"]
