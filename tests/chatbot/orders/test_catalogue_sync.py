"""The catalogue sync (chatbot/orders/catalogue_sync.py) against the real reference API
(``GET products``, api.py) served by live_server: pages, the demo's products arriving
whole, a bad product or a failing API changing nothing, removal of what the shop no
longer lists."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from decimal import Decimal
from io import StringIO
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.test import override_settings

from chatbot.orders import api, models
from chatbot.orders.backends import DjangoOrderService, HttpOrderService
from chatbot.orders.catalogue_sync import CatalogueSyncError, catalogue_sync
from chatbot.orders.tasks import catalogue_sync as catalogue_sync_task
from shop.models import Product, ProductVariant
from tests.net import free_port

API_KEY = "catalogue-api-test-key"
live = pytest.mark.django_db(transaction=True, available_apps=["chatbot.orders", "shop"])


@pytest.fixture
def api_url(live_server: object, shop: DjangoOrderService) -> Iterator[str]:
    with override_settings(TIERDESK_ORDER_API_KEY=API_KEY):
        yield f"{live_server.url}/shop-api/"  # type: ignore[attr-defined]


@pytest.fixture
def http(api_url: str) -> Iterator[HttpOrderService]:
    service = HttpOrderService(base_url=api_url, api_key=API_KEY, timeout_s=5)
    yield service
    service.close()


def _demo_catalogue() -> dict[str, dict[str, tuple[Decimal, bool]]]:
    return {
        p.product_id: {
            sku: (Decimal(str(v["price"])).quantize(Decimal("0.01")), bool(v["available"]))
            for sku, v in p.variants.items()
        }
        for p in models.Product.objects.all()
    }


def _synced() -> dict[str, dict[str, tuple[Decimal, bool]]]:
    return {
        p.product_id: {v.sku: (v.price, v.available) for v in p.variants.all()}
        for p in Product.objects.prefetch_related("variants")
    }


@live
def test_sync_reads_every_page_and_brings_the_demo_catalogue_whole(
    http: HttpOrderService, monkeypatch: pytest.MonkeyPatch, shop_data_dir: Path
) -> None:
    # Pages of 3 products, so the slice's products come in several pages.
    monkeypatch.setattr(api, "CATALOGUE_PAGE_SIZE", 3)
    expected = _demo_catalogue()
    assert len(expected) > 6
    result = catalogue_sync(client=http)
    assert result.ok and result.products_created == len(expected)
    assert _synced() == expected
    # The profile's categories travel with the products (apparel for the boots, if any).
    hiking = Product.objects.filter(name="Hiking Boots").first()
    assert hiking is None or hiking.category == "apparel"
    # Again: nothing changes.
    again = catalogue_sync(client=http)
    assert again.unchanged == sum(len(v) for v in expected.values())
    assert again.variants_created == again.variants_updated == again.variants_removed == 0


@live
def test_sync_removes_what_the_shop_no_longer_lists_and_keeps_nothing_half_done(
    http: HttpOrderService,
) -> None:
    assert catalogue_sync(client=http).ok
    gone = models.Product.objects.order_by("product_id").first()
    assert gone is not None
    models.Product.objects.filter(pk=gone.pk).delete()
    result = catalogue_sync(client=http)
    assert result.products_removed == 1 and not Product.objects.filter(product_id=gone.product_id)
    before = _synced()

    # The shop's system now lists a product with a negative price: the whole sync is
    # refused with the product's path and field, and the catalogue stays as it was.
    bad = models.Product.objects.order_by("product_id").last()
    assert bad is not None
    sku = next(iter(bad.variants))
    bad.variants[sku]["price"] = -5
    bad.save()
    refused = catalogue_sync(client=http)
    assert [(e.field, e.message) for e in refused.errors] == [
        ("price", "'-5.00' must be between 0 and 99999999.99")
    ]
    assert re.fullmatch(r"products\[\d+\]\.variants\[\d+\]", refused.errors[0].where)
    assert _synced() == before


@live
def test_sync_through_the_configured_backend_and_the_command(api_url: str) -> None:
    with pytest.raises(CatalogueSyncError, match="TIERDESK_ORDER_BACKEND=http"):
        catalogue_sync()
    http_backend = {
        "ORDER_SERVICE": "chatbot.orders.backends.HttpOrderService",
        "TIERDESK_ORDER_BACKEND": "http",
        "TIERDESK_ORDER_API_URL": api_url,
    }
    with override_settings(**http_backend):
        out = StringIO()
        call_command("catalogue_sync", stdout=out)
        assert "synced the catalogue" in out.getvalue()
        assert catalogue_sync_task() == {
            "products_created": 0,
            "products_updated": 0,
            "variants_created": 0,
            "variants_updated": 0,
            "unchanged": ProductVariant.objects.count(),
            "variants_removed": 0,
            "products_removed": 0,
            "errors": 0,
        }
        # The shop's API is down: the command says so, exits 1 and changes nothing.
        down = f"http://127.0.0.1:{free_port()}/"
        with (
            override_settings(TIERDESK_ORDER_API_URL=down),
            pytest.raises(CommandError, match=r"cannot be reached\. Nothing was changed\."),
        ):
            call_command("catalogue_sync")
    assert Product.objects.count() == models.Product.objects.count()


@pytest.mark.django_db
def test_sync_from_an_api_that_is_down_changes_nothing() -> None:
    Product.objects.create(product_id="KEEP", name="Kept")
    client = HttpOrderService(base_url=f"http://127.0.0.1:{free_port()}/", api_key="k", timeout_s=1)
    with pytest.raises(CatalogueSyncError, match=r"cannot be reached\. Nothing was changed\."):
        catalogue_sync(client=client)
    assert list(Product.objects.values_list("product_id", flat=True)) == ["KEEP"]


@live
def test_products_endpoint_answers_what_the_docs_show(api_url: str) -> None:
    doc = (settings.BASE_DIR / "docs" / "order-api.md").read_text()
    example = next(
        json.loads(block)
        for block in re.findall(r"```json\n(.*?)```", doc, re.DOTALL)
        if '"next_page"' in block
    )
    with httpx.Client(timeout=5, headers={"Authorization": f"Bearer {API_KEY}"}) as raw:
        body = raw.get(f"{api_url}products", params={"page": "1"}).json()
        assert raw.get(f"{api_url}products", params={"page": "0"}).status_code == 400
    assert set(body) == set(example) and set(body["products"][0]) == set(example["products"][0])
    assert set(body["products"][0]["variants"][0]) == set(example["products"][0]["variants"][0]) - {
        "currency"
    }
