from __future__ import annotations

from django.test import Client
from django.urls import reverse

from chatbot.orders import models
from chatbot.orders.backends import DjangoOrderService

from .conftest import JAMES, JAMES_EMAIL, JAMES_PROCESSED, MOHAMED_PENDING


def test_admin_finds_orders_by_id_without_hash_and_by_email(
    shop: DjangoOrderService, admin_client: Client
) -> None:
    url = reverse("admin:orders_order_changelist")
    page = admin_client.get(url, {"q": "W2611340"}).content.decode()
    assert JAMES_PROCESSED in page and MOHAMED_PENDING not in page

    page = admin_client.get(url, {"q": JAMES_EMAIL}).content.decode()
    assert JAMES_PROCESSED in page and MOHAMED_PENDING not in page

    customers = reverse("admin:orders_customer_changelist")
    assert JAMES in admin_client.get(customers, {"q": JAMES_EMAIL}).content.decode()


def test_admin_is_read_mostly(shop: DjangoOrderService, admin_client: Client) -> None:
    order = models.Order.objects.get(order_id=JAMES_PROCESSED)
    assert admin_client.get(reverse("admin:orders_order_add")).status_code == 403
    delete = reverse("admin:orders_order_delete", args=[order.pk])
    assert admin_client.get(delete).status_code == 403
    page = admin_client.get(reverse("admin:orders_order_change", args=[order.pk]))
    assert page.status_code == 200
    # Status changes go through the services (refunds); the admin shows it read-only.
    assert 'name="status"' not in page.content.decode()
    assert 'name="carrier"' in page.content.decode()
