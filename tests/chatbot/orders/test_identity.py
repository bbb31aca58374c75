from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from chatbot.orders.backends import DjangoOrderService
from chatbot.orders.identity import (
    ShopperTokenError,
    customer_from_text,
    customer_match_from_text,
    shopper_token_issue,
    shopper_token_verify,
)

from .conftest import DAIKI_SILVA, JAMES, JAMES_EMAIL, MOHAMED, SHARED_ZIP

KEY = "shop-signing-key-for-tests"


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def shop_sign(payload: dict[str, object], key: str = KEY) -> str:
    """The Python snippet from docs/identity.md, as a shop would write it."""
    body = _b64(json.dumps(payload).encode())
    sig = _b64(hmac.new(key.encode(), body.encode(), hashlib.sha256).digest())
    return f"{body}.{sig}"


@pytest.fixture(autouse=True)
def _token_key() -> Iterator[None]:
    with override_settings(TIERDESK_SHOPPER_TOKEN_KEY=KEY, TIERDESK_SHOPPER_TOKEN_MAX_AGE_S=3600):
        yield


def test_issued_token_verifies() -> None:
    claims = shopper_token_verify(token=shopper_token_issue(customer_id=JAMES, vip=True))
    assert claims.customer_id == JAMES
    assert claims.vip is True
    remaining = (claims.expires_at - datetime.now(UTC)).total_seconds()
    assert 3590 < remaining <= 3600


def test_token_signed_by_shop_snippet_verifies() -> None:
    token = shop_sign({"customer_id": MOHAMED, "exp": int(time.time()) + 600})
    claims = shopper_token_verify(token=token)
    assert (claims.customer_id, claims.vip) == (MOHAMED, False)


def _doc_block(heading: str, language: str) -> str:
    doc = (settings.BASE_DIR / "docs" / "identity.md").read_text()
    section = doc.split(heading, 1)[1]
    match = re.search(rf"```{language}\n(.*?)```", section, re.DOTALL)
    assert match, f"no {language} block after {heading!r}"
    return match.group(1)


def test_python_snippet_in_docs_signs_valid_tokens() -> None:
    namespace: dict[str, object] = {}
    exec(_doc_block("### Signing in Python", "python"), namespace)
    token = namespace["shopper_token"](JAMES, KEY, vip=True, ttl_s=600)  # type: ignore[operator]
    assert shopper_token_verify(token=token).customer_id == JAMES


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_node_snippet_in_docs_signs_valid_tokens() -> None:
    script = _doc_block("### Signing in Node.js", "js") + (
        f"console.log(shopperToken({JAMES!r}, {KEY!r}, {{ vip: true, ttlSeconds: 600 }}));"
    )
    result = subprocess.run(
        ["node", "-e", script], capture_output=True, text=True, timeout=20, check=True
    )
    claims = shopper_token_verify(token=result.stdout.strip())
    assert (claims.customer_id, claims.vip) == (JAMES, True)


def test_expired_token_is_refused() -> None:
    with pytest.raises(ShopperTokenError) as caught:
        shopper_token_verify(token=shopper_token_issue(customer_id=JAMES, ttl_s=-1))
    assert caught.value.reason == "expired"


def test_token_valid_longer_than_max_age_is_refused() -> None:
    token = shop_sign({"customer_id": JAMES, "exp": int(time.time()) + 30 * 86400})
    with pytest.raises(ShopperTokenError) as caught:
        shopper_token_verify(token=token)
    assert caught.value.reason == "expired"


def test_tampered_payload_is_refused() -> None:
    token = shopper_token_issue(customer_id=JAMES)
    payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    claims["customer_id"] = MOHAMED  # someone else's orders
    forged = f"{_b64(json.dumps(claims).encode())}.{signature}"
    with pytest.raises(ShopperTokenError) as caught:
        shopper_token_verify(token=forged)
    assert caught.value.reason == "forged"


def test_token_signed_with_another_key_is_refused() -> None:
    token = shop_sign({"customer_id": JAMES, "exp": int(time.time()) + 600}, key="not-the-key")
    with pytest.raises(ShopperTokenError) as caught:
        shopper_token_verify(token=token)
    assert caught.value.reason == "forged"


def test_no_configured_key_trusts_no_token() -> None:
    token = shopper_token_issue(customer_id=JAMES)
    with override_settings(TIERDESK_SHOPPER_TOKEN_KEY=""):
        with pytest.raises(ShopperTokenError):
            shopper_token_verify(token=token)
        with pytest.raises(ImproperlyConfigured):
            shopper_token_issue(customer_id=JAMES)


@pytest.mark.parametrize(
    "garbage",
    ["", "abc", "a.b.c", "!!!.???", "x" * 5000, "eyJ.", ".sig", "a b.c d"],
)
def test_garbage_is_malformed(garbage: str) -> None:
    with pytest.raises(ShopperTokenError):
        shopper_token_verify(token=garbage)


@pytest.mark.parametrize(
    "payload",
    [
        {"customer_id": "", "exp": 4_000_000_000},
        {"customer_id": 42, "exp": 4_000_000_000},
        {"customer_id": "a", "exp": "tomorrow"},
        {"customer_id": "a", "exp": True},
        {"customer_id": "a", "vip": "yes", "exp": 4_000_000_000},
        {"customer_id": "a"},
        ["customer_id", "a"],
    ],
)
def test_correctly_signed_but_malformed_payload_is_refused(payload: object) -> None:
    body = _b64(json.dumps(payload).encode())
    sig = _b64(hmac.new(KEY.encode(), body.encode(), hashlib.sha256).digest())
    with pytest.raises(ShopperTokenError) as caught:
        shopper_token_verify(token=f"{body}.{sig}")
    assert caught.value.reason == "malformed"


# --- verification in the chat ---------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        f"my email is {JAMES_EMAIL}",
        f"{JAMES_EMAIL.upper()}.",
        "I'm James Li, zip 10083",
        "james li 10083 where is my order #W2611340?",
        "Name: LI James. ZIP: 10083-1234",
        "James Li, order W2611340, 10083 is my zip",  # other numbers around the zip
    ],
)
def test_customer_from_text_identifies(shop: DjangoOrderService, text: str) -> None:
    customer = customer_from_text(text=text, service=shop)
    assert customer is not None and customer.customer_id == JAMES


def test_match_says_how(shop: DjangoOrderService) -> None:
    by_email = customer_match_from_text(text=JAMES_EMAIL, service=shop)
    by_name = customer_match_from_text(text="James Li 10083", service=shop)
    assert by_email is not None and by_email.method == "email"
    assert by_name is not None and by_name.method == "name_zip"


@pytest.mark.parametrize(
    "text",
    [
        "I'm James Li",  # name alone
        "my zip is 10083",  # zip alone
        "James, zip 10083",  # first name only
        "Mr Li from 10083",  # last name only
        "I'm James Li, zip 10084",  # wrong zip
        "I'm Jameson Lim, zip 10083",  # names only as parts of other words
        f"Daiki, zip {SHARED_ZIP}",  # two Daikis live there
        f"Daiki Silva and Daiki Davis, {SHARED_ZIP}",  # two customers named
        "james.li4495@example.org",  # another email
        "james.li4495",  # part of an email
        f"{JAMES_EMAIL} and I'm Daiki Silva, {SHARED_ZIP}",  # two different customers
        "",
    ],
)
def test_customer_from_text_refuses_partial_or_ambiguous_info(
    shop: DjangoOrderService, text: str
) -> None:
    assert customer_from_text(text=text, service=shop) is None


def test_name_and_zip_among_zip_neighbours(shop: DjangoOrderService) -> None:
    customer = customer_from_text(text=f"daiki SILVA {SHARED_ZIP}", service=shop)
    assert customer is not None and customer.customer_id == DAIKI_SILVA
