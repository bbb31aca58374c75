"""Issue #18 item 7: a new shop starts without the demo: ``setup_shop`` creates the
superuser, the groups and the default EN/ZH intents and templates, and no demo data."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command

from chatbot.orders.models import Customer, Order
from knowledge.models import Document, SynonymSet
from routing.models import Intent, ReplyTemplate

pytestmark = pytest.mark.django_db


def test_setup_shop_creates_what_a_shop_needs_and_no_demo(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DJANGO_SUPERUSER_USERNAME", "owner")
    monkeypatch.setenv("DJANGO_SUPERUSER_EMAIL", "owner@shop.example")
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", "a-long-password-1234")
    call_command("setup_shop", "--noinput", stdout=StringIO())
    owner = get_user_model().objects.get(username="owner")
    assert owner.is_superuser and owner.check_password("a-long-password-1234")
    assert Group.objects.filter(name="operators").exists()
    assert Intent.objects.filter(name="order_status", enabled=True).exists()
    languages = set(
        ReplyTemplate.objects.filter(intent__name="order_status").values_list("language", flat=True)
    )
    assert {"en", "zh"} <= languages
    # No demo shop: no shoppers, orders or knowledge-base documents.
    assert not Customer.objects.exists() and not Order.objects.exists()
    assert not Document.objects.exists()
    # The demo's words are the demo's: a new shop adds its own synonym sets.
    assert not SynonymSet.objects.exists()
    # Idempotent: a second run adds nothing and keeps an edited template.
    template = ReplyTemplate.objects.filter(intent__name="order_status").first()
    assert template is not None
    template.text = "edited by the shop"
    template.save()
    count = ReplyTemplate.objects.count()
    out = StringIO()
    call_command("setup_shop", "--noinput", stdout=out)
    assert "one exists already" in out.getvalue()
    assert ReplyTemplate.objects.count() == count
    template.refresh_from_db()
    assert template.text == "edited by the shop"
    assert get_user_model().objects.filter(is_superuser=True).count() == 1
