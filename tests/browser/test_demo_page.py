"""The demo shop page (frontend/views.py), through Django's test client: no browser."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client, override_settings

from chatbot.orders.identity import shopper_token_verify

TOKEN_RE = re.compile(r'<tierdesk-chat[^>]*\btoken="([^"]+)"')


def widget_token(html: str) -> str | None:
    match = TOKEN_RE.search(html)
    return match.group(1) if match else None


@pytest.fixture(autouse=True)
def demo_shop_mode(settings: Any) -> None:
    """These tests are of the demo shop's mode (``make run`` turns it on)."""
    settings.TIERDESK_DEMO_SHOP = True
    settings.TIERDESK_DEMO_IMPERSONATION = True


@pytest.mark.django_db
def test_page_signs_the_default_demo_shopper_in(client: Client, seeded_shop: None) -> None:
    response = client.get("/")
    html = response.content.decode()

    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    assert "Signed in as James Li (james_li_5688)" in html
    assert "#W2611340" in html  # his orders are listed
    assert '<script src="/static/tierdesk/widget.js" defer></script>' in html
    token = widget_token(html)
    assert token is not None
    assert shopper_token_verify(token=token).customer_id == "james_li_5688"
    assert 'shopper="james_li_5688"' in html


@pytest.mark.django_db
def test_page_can_sign_in_another_shopper(client: Client, seeded_shop: None) -> None:
    html = client.get("/", {"as": "aarav_brown_3744"}).content.decode()

    assert "(aarav_brown_3744)" in html
    assert "#W5065081" in html and "#W2611340" not in html
    token = widget_token(html)
    assert token is not None
    assert shopper_token_verify(token=token).customer_id == "aarav_brown_3744"


@pytest.mark.django_db
def test_page_ignores_a_malformed_shopper_id(client: Client, seeded_shop: None) -> None:
    html = client.get("/", {"as": '"><script>alert(1)</script>'}).content.decode()

    assert "<script>alert(1)" not in html
    assert "(james_li_5688)" in html


@pytest.mark.django_db
def test_anonymous_visitor_gets_no_token(client: Client, seeded_shop: None) -> None:
    html = client.get("/", {"token": "none"}).content.decode()

    assert "Not signed in" in html
    assert widget_token(html) is None
    assert "#W2611340" not in html


@pytest.mark.django_db
def test_page_renders_before_the_shop_is_seeded(client: Client) -> None:
    html = client.get("/").content.decode()

    assert "No products in the catalogue yet" in html
    assert "No orders to list" in html
    assert "Signed in as james_li_5688" in html


@pytest.mark.django_db
def test_production_never_signs_demo_tokens(client: Client, seeded_shop: None) -> None:
    with override_settings(PRODUCTION=True):
        html = client.get("/").content.decode()

    assert widget_token(html) is None


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("demo_shop", "backend"), [(False, "django"), (True, "http")], ids=["not-demo", "real-orders"]
)
def test_impersonation_needs_the_demo_mode_and_the_demo_orders(
    client: Client, seeded_shop: None, demo_shop: bool, backend: str
) -> None:
    from config.checks import safety_problems

    with override_settings(
        TIERDESK_DEMO_SHOP=demo_shop,
        TIERDESK_ORDER_BACKEND=backend,
        TIERDESK_DEMO_IMPERSONATION=demo_shop and backend == "django",
    ):
        from django.conf import settings

        html = client.get("/", {"as": "aarav_brown_3744"}).content.decode()
        ids = [problem.id for problem in safety_problems(settings)]

    assert widget_token(html) is None
    assert "Not signed in" in html and "#W5065081" not in html
    # The pair that would hand out a real shop's orders is refused by `manage.py check`.
    assert ("tierdesk.E003" in ids) == demo_shop


@pytest.mark.django_db
def test_the_page_lists_the_demo_catalogue(client: Client, seeded_shop: None) -> None:
    from shop.models import Product

    html = client.get("/").content.decode()
    first = Product.objects.order_by("name", "product_id").first()
    assert first is not None and f"<h2>{first.name}</h2>" in html
    assert html.count('<li class="card">') == 6
    assert "No products in the catalogue yet" not in html


@pytest.mark.django_db
def test_a_second_shops_page_shows_its_own_catalogue(client: Client) -> None:
    from pathlib import Path

    from django.core.management import call_command

    from shop.seed import profile_load

    shop = Path(__file__).resolve().parent / "second_shop"
    profile_load((shop / "profile.json").read_bytes())
    call_command("import_catalogue", str(shop / "catalogue.csv"))
    html = client.get("/").content.decode()
    assert "<h2>Dales Gravel Bike</h2>" in html and "from £949.00" in html
    assert "$" not in html.split('aria-label="Products"')[1].split("</ul>")[0]
    for demo_name in ("T-Shirt", "Water Bottle", "Hiking Boots"):
        assert demo_name not in html
    # The demo shop's mode (this file's fixture) keeps its name; another shop's page not.
    assert "Northwind Goods" in html
    with override_settings(TIERDESK_DEMO_SHOP=False):
        other = client.get("/").content.decode()
    assert "Northwind Goods" not in other and "tau-bench" not in other
    assert "demo shopper" not in other
    assert "<h2>Dales Gravel Bike</h2>" in other
