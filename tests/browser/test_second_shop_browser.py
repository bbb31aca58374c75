"""A second shop, unlike the demo, set up with the product's commands only: Pennine
Cycles, a UK bike shop (Shopify-style ``#1001`` ids, UK postcodes, pounds, a 14-day
return window), from the files in tests/browser/second_shop/.

A fresh database gets ``setup_shop --profile``, ``import_catalogue`` and
``knowledge_ingest`` of the shop's articles, and nothing of the demo (no
``seed_demo``). The shop's orders come from its own order API, a real HTTP server
implementing docs/order-api.md over the test's data (tests/browser/shop_api.py), and
its own page signs the shopper in with a token and embeds the widget. In Chromium the
shopper asks where order 1004 is, starts a return (the 14-day window, not the demo's
30) and asks L3 about a bike (its name and pound price). Writes
docs/widget-second-shop.png when TIERDESK_DOCS_SCREENSHOTS=1."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.net import free_port

from .live import REPO, _manage, _server_database, _stop, daphne_start, server_env
from .shop_api import ShopData, order_api_run, shop_page_run

pytestmark = [pytest.mark.browser, pytest.mark.models]

SHOP = Path(__file__).with_name("second_shop")
SCRIPT = Path(__file__).with_name("second_shop_e2e.mjs")
NODE_TIMEOUT_S = 900
SHOPPER = "olivia_hughes_2041"
FRONT_SHOT = "front-page-second-shop.png"
API_KEY = "pennine-order-api-key"
TOKEN_KEY = "pennine-shopper-token-key-for-tests"
MESSAGES = [
    "where is order 1004?",
    "I'd like to return an item from order 1004",
    "1",
    "yes",
    # "compare": the seeded comparison rule sends it to L3, which reads the catalogue.
    "Compare the 54 cm and the 56 cm Dales Gravel Bike: what are they built with, and how "
    "much does each cost?",
]


def _node(browser_tools: str, page: str, shot: Path, front: str) -> dict[str, object]:
    cmd = [
        *(browser_tools, str(SCRIPT), "--page", page),
        *("--messages", json.dumps(MESSAGES), "--screenshot", str(shot)),
        # The picture shows the return confirmation: the shop's 14 days and conditions.
        *("--shot-after", str(MESSAGES.index("1"))),
        # Then Tierdesk's own front page, which lists this shop's catalogue.
        *("--front", front, "--front-screenshot", str(shot.with_name(FRONT_SHOT))),
    ]
    proc = subprocess.run(
        cmd, cwd=REPO, capture_output=True, text=True, timeout=NODE_TIMEOUT_S, check=False
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    result: dict[str, object] = json.loads(lines[-1]) if lines else {}
    if proc.returncode != 0 or not result.get("ok"):
        result.setdefault("stderr", proc.stderr[-2000:])
    return result


def test_a_uk_bike_shop_set_up_by_commands_answers_its_shopper(
    browser_tools: str, tmp_path: Path
) -> None:
    shop = ShopData(SHOP)
    log = tmp_path / "server.log"
    page_port = free_port()
    shot = (
        REPO / "docs" / "widget-second-shop.png"
        if os.environ.get("TIERDESK_DOCS_SCREENSHOTS")
        else tmp_path / "widget-second-shop.png"
    )
    with (
        order_api_run(shop, API_KEY) as (api_url, api),
        _server_database(tmp_path, "_second_shop") as database_url,
    ):
        env = server_env(
            database_url,
            {
                "TIERDESK_DEMO_SHOP": "false",
                "TIERDESK_ORDER_BACKEND": "http",
                "TIERDESK_ORDER_API_URL": api_url,
                "TIERDESK_ORDER_API_KEY": API_KEY,
                "TIERDESK_SHOPPER_TOKEN_KEY": TOKEN_KEY,
                "TIERDESK_WIDGET_ORIGINS": f"http://127.0.0.1:{page_port}",
                "DJANGO_SUPERUSER_USERNAME": "pennine",
                "DJANGO_SUPERUSER_EMAIL": "owner@pennine.example",
                "DJANGO_SUPERUSER_PASSWORD": "pennine-owner-password-1",
            },
        )
        _manage(env, log, "setup_shop", "--noinput", "--profile", str(SHOP / "profile.json"))
        _manage(env, log, "import_catalogue", str(SHOP / "catalogue.csv"))
        articles = sorted(str(p) for p in (SHOP / "articles").glob("*.md"))
        _manage(env, log, "knowledge_ingest", *articles)
        proc, url = daphne_start(env, log)
        try:
            with shop_page_run(
                shop, customer_id=SHOPPER, tierdesk=url, token_key=TOKEN_KEY, port=page_port
            ) as page:
                result = _node(browser_tools, page, shot, url + "/")
        finally:
            _stop(proc)
        if not result.get("ok"):
            pytest.fail(
                f"second shop scenario failed: {result.get('error')}\n"
                f"steps: {result.get('steps')}\nreplies: {result.get('replies')}\n"
                f"console: {result.get('console')}\nstderr: {result.get('stderr')}\n"
                f"api requests: {api.requests}\nserver log:\n"
                f"{log.read_text(errors='replace')[-4000:]}"
            )
    replies = result["replies"]
    assert isinstance(replies, list)
    status, listed, confirm, requested, product = replies
    print("\n" + "\n".join(f"[{r['tier']}] {r['said']} -> {r['text']}" for r in replies))
    assert not any(r["errors"] for r in replies), replies
    # The order, in the shop's own id form, from the shop's own API.
    assert status["tier"] == "L1" and "#1004" in status["text"], status
    assert "W1004" not in status["text"], status
    assert any(r.startswith("GET /api/customers/olivia_hughes_2041/orders") for r in api.requests)
    # The return quotes the shop's window and its conditions, not the demo's.
    assert "Canal Pannier Bag" in listed["text"], listed
    assert "To confirm: return Canal Pannier Bag" in confirm["text"], confirm
    assert "14 days" in confirm["text"] and "30 days" not in confirm["text"], confirm
    assert "original box" in confirm["text"] and "tags" not in confirm["text"], confirm
    assert "Royal Mail label" in confirm["text"] and "prepaid" not in confirm["text"], confirm
    assert "within 5 working days" in confirm["text"], confirm
    assert "business days" not in confirm["text"], confirm
    # "yes" requests it from the shop's own API, once.
    posts = [r for r in api.requests if r.startswith("POST ")]
    assert posts == ["POST /api/customers/olivia_hughes_2041/orders/1004/return"], api.requests
    assert shop.orders["#1004"]["order"]["status"] == "return requested"
    assert requested["tier"] == "L1" and "#1004" in requested["text"], requested
    # L3 answers from the shop's catalogue, in pounds.
    assert product["tier"] == "L3", product
    assert "Dales Gravel Bike" in product["text"], product
    assert "£949" in product["text"] and "$" not in product["text"], product
    # Tierdesk's front page shows this shop's products in pounds, none of the demo's.
    front = result["front"]
    assert isinstance(front, dict)
    cards = "\n".join(front["products"])
    assert "Dales Gravel Bike" in cards and "from £949.00" in cards, cards
    assert "$" not in cards and "Backpack" not in cards, cards
    assert front["title"] == "Shop front", front
    assert not result["errors"], result["errors"]
    assert shot.stat().st_size > 10_000
