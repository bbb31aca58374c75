"""CORS on POST /tickets/ (desk/cors.py): the ticket form of a widget embedded on a shop
site listed in TIERDESK_WIDGET_ORIGINS gets its preflight answered and its POST's
answer readable; any other origin gets a 403 that names the setting and no CORS header.
Real database and view (Django's test client)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from chatbot.models import Conversation
from desk.models import Ticket

pytestmark = pytest.mark.django_db

SHOP = "http://shop.localhost:8080"


@pytest.fixture(autouse=True)
def shop_listed(settings: Any) -> None:
    settings.TIERDESK_WIDGET_ORIGINS = [SHOP]


def preflight(origin: str) -> Any:
    return Client().options(
        "/tickets/",
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
    )


def post(origin: str, session: str) -> Any:
    return Client().post(
        "/tickets/",
        {"session": session, "email": "jane@example.com", "question": "My parcel is wet."},
        content_type="application/json",
        headers={"Origin": origin},
    )


def test_listed_shop_sites_preflight_is_answered() -> None:
    response = preflight(SHOP)
    assert response.status_code == 204
    assert response["Access-Control-Allow-Origin"] == SHOP
    assert response["Access-Control-Allow-Methods"] == "POST"
    assert "content-type" in response["Access-Control-Allow-Headers"].lower()
    assert "Origin" in response["Vary"]


def test_another_origins_preflight_and_post_are_refused_naming_the_setting() -> None:
    session = Conversation.objects.create().session_key
    for response in (preflight("http://evil.test"), post("http://evil.test", session)):
        assert response.status_code == 403
        assert "Access-Control-Allow-Origin" not in response
        assert b"origin http://evil.test is not in TIERDESK_WIDGET_ORIGINS" in response.content
    assert not Ticket.objects.filter(conversation__session_key=session).exists()


def test_listed_shop_sites_ticket_is_stored_and_its_answer_readable() -> None:
    session = Conversation.objects.create().session_key
    response = post(SHOP, session)
    assert response.status_code == 200 and response.json()["ok"] is True
    assert response["Access-Control-Allow-Origin"] == SHOP
    assert "Origin" in response["Vary"]


def test_tierdesks_own_pages_need_no_listing() -> None:
    session = Conversation.objects.create().session_key
    response = post("http://testserver", session)
    assert response.status_code == 200
    # Without Origin (not a browser's cross-origin request) nothing changes either.
    response = Client().post(
        "/tickets/",
        {"session": session, "email": "jane@example.com", "question": "Again."},
        content_type="application/json",
    )
    assert response.status_code == 200 and "Access-Control-Allow-Origin" not in response
