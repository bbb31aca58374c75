"""Who the shopper is: a token signed by the shop, or verification in the chat.

Shopper token (docs/identity.md)::

    base64url(JSON payload) "." base64url(HMAC-SHA256(key, first part))

base64url without "=" padding; the MAC is computed over the ASCII text of the first
part, with ``settings.TIERDESK_SHOPPER_TOKEN_KEY`` (UTF-8) as the key. The payload is
``{"customer_id": str, "vip": bool, "exp": int unix seconds}`` (``iat`` optional).

In-chat verification follows the store policy (third_party/tau_bench_retail/wiki.md):
the shopper is identified by their email, or by first name + last name + zip. Only a
complete, unambiguous match counts; a name alone or a zip alone never does.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from ..refusals import Refusal
from .types import Customer, OrderService

MAX_TOKEN_CHARS = 2048
MAX_CUSTOMER_ID_CHARS = 64
# Tolerated difference between the shop's clock and ours when checking that a token
# is not valid for longer than TIERDESK_SHOPPER_TOKEN_MAX_AGE_S.
CLOCK_SKEW_S = 60

_B64URL_RE = re.compile(r"^[A-Za-z0-9_-]+$")


class ShopperTokenError(Refusal, ValueError):
    """The token is malformed, forged or expired; ``reason`` says which (for logs only).
    The shopper sees ``bad_token`` with the message."""

    code = "bad_token"

    def __init__(self, reason: Literal["malformed", "forged", "expired"], message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class ShopperClaims:
    customer_id: str
    vip: bool
    expires_at: datetime  # aware, UTC


def _b64encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _b64decode(text: str) -> bytes:
    if not _B64URL_RE.match(text):
        raise ShopperTokenError("malformed", "token is not base64url")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise ShopperTokenError("malformed", "token is not base64url") from exc


def _key() -> bytes:
    key = settings.TIERDESK_SHOPPER_TOKEN_KEY
    if not key:
        # No key configured means no token can be trusted, not that every token is.
        raise ShopperTokenError("forged", "shopper tokens are not configured")
    return str(key).encode("utf-8")


def _sign(payload_part: str) -> bytes:
    return hmac.new(_key(), payload_part.encode("ascii"), hashlib.sha256).digest()


def shopper_token_issue(*, customer_id: str, vip: bool = False, ttl_s: int | None = None) -> str:
    """A token as the shop would sign it (the demo shop page and tests use this)."""
    if not settings.TIERDESK_SHOPPER_TOKEN_KEY:
        raise ImproperlyConfigured("TIERDESK_SHOPPER_TOKEN_KEY is empty: tokens cannot be signed")
    now = int(time.time())
    ttl = settings.TIERDESK_SHOPPER_TOKEN_MAX_AGE_S if ttl_s is None else ttl_s
    payload = {"customer_id": customer_id, "vip": vip, "iat": now, "exp": now + int(ttl)}
    payload_part = _b64encode(json.dumps(payload, separators=(",", ":")).encode("utf-8"))
    return f"{payload_part}.{_b64encode(_sign(payload_part))}"


def shopper_token_verify(*, token: str) -> ShopperClaims:
    """The token's claims, or ShopperTokenError if it is malformed, forged or expired."""
    if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_CHARS:
        raise ShopperTokenError("malformed", "token is empty or too long")
    parts = token.strip().split(".")
    if len(parts) != 2:
        raise ShopperTokenError("malformed", "token must be payload.signature")
    payload_part, signature_part = parts
    signature = _b64decode(signature_part)
    payload_raw = _b64decode(payload_part)
    # The signature is checked before the payload is parsed: nothing an attacker
    # wrote is interpreted until we know the shop wrote it.
    if not hmac.compare_digest(signature, _sign(payload_part)):
        raise ShopperTokenError("forged", "token signature does not match")
    try:
        payload: Any = json.loads(payload_raw)
    except ValueError as exc:
        raise ShopperTokenError("malformed", "token payload is not JSON") from exc
    if not isinstance(payload, dict):
        raise ShopperTokenError("malformed", "token payload is not an object")

    customer_id = payload.get("customer_id")
    vip = payload.get("vip", False)
    exp = payload.get("exp")
    if not isinstance(customer_id, str) or not 0 < len(customer_id) <= MAX_CUSTOMER_ID_CHARS:
        raise ShopperTokenError("malformed", "customer_id must be a non-empty string")
    if not isinstance(vip, bool):
        raise ShopperTokenError("malformed", "vip must be a boolean")
    if not isinstance(exp, int) or isinstance(exp, bool):
        raise ShopperTokenError("malformed", "exp must be an integer (unix seconds)")

    now = time.time()
    if now >= exp:
        raise ShopperTokenError("expired", "token has expired")
    if exp - now > settings.TIERDESK_SHOPPER_TOKEN_MAX_AGE_S + CLOCK_SKEW_S:
        # A leaked token must not stay usable for longer than the configured maximum,
        # whatever lifetime the signer chose.
        raise ShopperTokenError("expired", "token lifetime exceeds the allowed maximum")
    return ShopperClaims(
        customer_id=customer_id, vip=vip, expires_at=datetime.fromtimestamp(exp, tz=UTC)
    )


# --- verification in the chat ---------------------------------------------------------------------

_EMAIL_RE = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
# Five digits not inside a longer number, so order ids (#W2611340) and phone numbers
# are not read as zips; ZIP+4 ("10083-1234") counts as its first five digits.
_ZIP_RE = re.compile(r"(?<!\d)(\d{5})(?:-\d{4})?(?!\d)")
# Bounds the lookups one message can cause.
_MAX_CANDIDATES = 5


@dataclass(frozen=True)
class CustomerMatch:
    customer: Customer
    method: Literal["email", "name_zip"]


def _has_word(word: str, text: str) -> bool:
    word = word.strip()
    # Whole words only: "Li" must not match "Lisa" or "Olive".
    return (
        bool(word)
        and re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text, re.IGNORECASE) is not None
    )


def customer_match_from_text(*, text: str, service: OrderService) -> CustomerMatch | None:
    """Like ``customer_from_text``, also saying how the shopper was identified."""
    matches: dict[str, CustomerMatch] = {}
    for email in list(dict.fromkeys(_EMAIL_RE.findall(text)))[:_MAX_CANDIDATES]:
        customer = service.customer_by_email(email=email.lower())
        if customer is not None:
            matches.setdefault(customer.customer_id, CustomerMatch(customer, "email"))
    for zip_code in list(dict.fromkeys(_ZIP_RE.findall(text)))[:_MAX_CANDIDATES]:
        for customer in service.customers_in_zip(zip=zip_code):
            if customer.zip == zip_code and (
                _has_word(customer.first_name, text) and _has_word(customer.last_name, text)
            ):
                matches.setdefault(customer.customer_id, CustomerMatch(customer, "name_zip"))
    # Details that point at two different customers identify neither.
    return next(iter(matches.values())) if len(matches) == 1 else None


def customer_from_text(*, text: str, service: OrderService) -> Customer | None:
    """The customer the text identifies by email, or by first + last name + zip.

    None unless the text identifies exactly one customer completely, e.g.
    "I'm James Li, zip 10083" or "my email is james.li4495@example.com".
    """
    match = customer_match_from_text(text=text, service=service)
    return match.customer if match else None
