"""Who the shopper is: a token signed by the shop, or verification in the chat.

Shopper token (docs/identity.md), or an HS256 JWT with a ``kid`` (below)::

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
import logging
import re
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import jwt
from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext_noop

from routing.order_ids import order_ids
from shop.profile import shop_profile
from shop.specs import postcode_canonical

from ..mail import Email, email_send
from ..refusals import Refusal
from .types import Customer, OrderService

MAX_TOKEN_CHARS = 2048
MAX_CUSTOMER_ID_CHARS = 64
# Tolerated difference between the shop's clock and ours when checking that a token
# is not valid for longer than TIERDESK_SHOPPER_TOKEN_MAX_AGE_S.
CLOCK_SKEW_S = 60

_B64URL_RE = re.compile(r"^[A-Za-z0-9_-]+$")
logger = logging.getLogger(__name__)


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
        raise ShopperTokenError("malformed", gettext_noop("token is not base64url"))
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise ShopperTokenError("malformed", gettext_noop("token is not base64url")) from exc


def _key() -> bytes:
    key = settings.TIERDESK_SHOPPER_TOKEN_KEY
    if not key:
        # No key configured means no token can be trusted, not that every token is.
        raise ShopperTokenError("forged", gettext_noop("shopper tokens are not configured"))
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
        raise ShopperTokenError("malformed", gettext_noop("token is empty or too long"))
    parts = token.strip().split(".")
    if len(parts) == 3:
        return _jwt_claims(token.strip())
    if len(parts) != 2:
        raise ShopperTokenError("malformed", gettext_noop("token must be payload.signature"))
    payload_part, signature_part = parts
    signature = _b64decode(signature_part)
    payload_raw = _b64decode(payload_part)
    # The signature is checked before the payload is parsed: nothing an attacker
    # wrote is interpreted until we know the shop wrote it.
    if not hmac.compare_digest(signature, _sign(payload_part)):
        raise ShopperTokenError("forged", gettext_noop("token signature does not match"))
    try:
        payload: Any = json.loads(payload_raw)
    except ValueError as exc:
        raise ShopperTokenError("malformed", gettext_noop("token payload is not JSON")) from exc
    if not isinstance(payload, dict):
        raise ShopperTokenError("malformed", gettext_noop("token payload is not an object"))
    return _claims(payload)


def _claims(payload: dict[str, Any]) -> ShopperClaims:
    """The checks both token formats share: field types, expiry, the lifetime cap."""
    customer_id = payload.get("customer_id")
    vip = payload.get("vip", False)
    exp = payload.get("exp")
    if not isinstance(customer_id, str) or not 0 < len(customer_id) <= MAX_CUSTOMER_ID_CHARS:
        raise ShopperTokenError("malformed", gettext_noop("customer_id must be a non-empty string"))
    if not isinstance(vip, bool):
        raise ShopperTokenError("malformed", gettext_noop("vip must be a boolean"))
    if not isinstance(exp, int) or isinstance(exp, bool):
        raise ShopperTokenError("malformed", gettext_noop("exp must be an integer (unix seconds)"))

    now = time.time()
    if now >= exp:
        raise ShopperTokenError("expired", gettext_noop("token has expired"))
    if exp - now > settings.TIERDESK_SHOPPER_TOKEN_MAX_AGE_S + CLOCK_SKEW_S:
        # A leaked token must not stay usable for longer than the configured maximum,
        # whatever lifetime the signer chose.
        raise ShopperTokenError(
            "expired", gettext_noop("token lifetime exceeds the allowed maximum")
        )
    return ShopperClaims(
        customer_id=customer_id, vip=vip, expires_at=datetime.fromtimestamp(exp, tz=UTC)
    )


# --- verification in the chat ---------------------------------------------------------------------

_EMAIL_RE = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")

# Bounds the lookups one message can cause.
_MAX_CANDIDATES = 5


@dataclass(frozen=True)
class CustomerMatch:
    customer: Customer
    method: Literal["email", "name_zip"]


def postcodes_in_text(text: str) -> list[str]:
    """The postcodes in the text in the shop's formats (shop profile), canonical, each
    once; never the digits of an order id ("#1001", "SO-12345") or of a longer number.
    US ZIP+4 ("10083-1234") counts as its first five digits."""
    for order_id in order_ids().find_all(text):
        digits = re.sub(r"\D", "", order_id)
        text = re.sub(rf"(?<!\d){digits}(?!\d)", " ", text)
    found: list[str] = []
    for postcode_format in shop_profile().postcode_formats:
        for match in re.finditer(postcode_format.pattern, text):
            code = postcode_canonical(match["code"])
            if code not in found:
                found.append(code)
    return found


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
    for zip_code in postcodes_in_text(text)[:_MAX_CANDIDATES]:
        for customer in service.customers_in_zip(zip=zip_code):
            if postcode_canonical(customer.zip) == zip_code and (
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


# --- JWT shopper tokens -----------------------------------------------------------------------
# Every shop platform has a JWT library, so a shop may sign an HS256 JWT instead of the
# two-part token above: header {"alg": "HS256", "kid": <key id>}, claims "sub" (or
# "customer_id"), "exp" (required), "vip" (optional). The key is looked up by ``kid`` in
# TIERDESK_SHOPPER_JWT_KEYS, so a shop can rotate keys without downtime.


def _jwt_claims(token: str) -> ShopperClaims:
    try:
        header = jwt.get_unverified_header(token)
    except jwt.InvalidTokenError as exc:
        raise ShopperTokenError("malformed", gettext_noop("JWT header is not readable")) from exc
    # Only HS256: "none" and asymmetric algorithms (key confusion) are refused outright.
    if header.get("alg") != "HS256":
        raise ShopperTokenError("malformed", gettext_noop("JWT must be signed with HS256"))
    keys: dict[str, str] = settings.TIERDESK_SHOPPER_JWT_KEYS
    kid = header.get("kid")
    if not isinstance(kid, str) or kid not in keys:
        raise ShopperTokenError("forged", gettext_noop("JWT key id is unknown"))
    try:
        payload = jwt.decode(token, keys[kid], algorithms=["HS256"], options={"require": ["exp"]})
    except jwt.ExpiredSignatureError as exc:
        raise ShopperTokenError("expired", gettext_noop("token has expired")) from exc
    except jwt.InvalidSignatureError as exc:
        raise ShopperTokenError("forged", gettext_noop("token signature does not match")) from exc
    except jwt.InvalidTokenError as exc:
        raise ShopperTokenError("malformed", f"JWT is not valid: {type(exc).__name__}") from exc
    return _claims(
        {
            "customer_id": payload.get("customer_id", payload.get("sub")),
            "vip": payload.get("vip", False),
            "exp": payload.get("exp"),
        }
    )


def shopper_jwt_issue(
    *, customer_id: str, kid: str, vip: bool = False, ttl_s: int | None = None
) -> str:
    """A JWT as a shop would sign it (tests and docs use this)."""
    now = int(time.time())
    ttl = settings.TIERDESK_SHOPPER_TOKEN_MAX_AGE_S if ttl_s is None else ttl_s
    claims = {"sub": customer_id, "vip": vip, "iat": now, "exp": now + int(ttl)}
    key = settings.TIERDESK_SHOPPER_JWT_KEYS[kid]
    return jwt.encode(claims, key, algorithm="HS256", headers={"kid": kid})


# --- strong proof for changing an order ---------------------------------------------------------
# Knowing a shopper's email (or name + zip) is not proof of being them. Reading an order
# may rest on it if the shop allows (TIERDESK_CHAT_IDENTITY_READS); changing one needs the
# shop's signed token or a one-time code sent to the shopper's email
# (TIERDESK_ORDER_CHANGE_PROOF). The code lives hashed in the conversation's state, with
# its attempts; a customer who reaches the attempt limit is locked for a while in the
# shared cache, so opening a new conversation does not buy new attempts.

STRONG_METHODS = frozenset({"token", "email_code"})
CODE_DIGITS = 6
_CODE_RE = re.compile(r"(?<!\d)(\d{6})(?!\d)")
_STATE_KEY = "verify_code"
_PROOF_KEY = "strong_proof"

EMAIL_TEXT = {
    "en": (
        "Your verification code",
        "Your code is {code}. Type it in the chat to confirm the change to your order. "
        "It expires in {minutes} minutes. If you didn't ask for it, ignore this email: "
        "nothing changes without it.",
    ),
    "zh": (
        "您的验证码",
        "您的验证码是 {code}。请在聊天中输入它以确认对订单的修改，{minutes} 分钟内有效。"
        "如果不是您本人操作，请忽略此邮件：没有验证码，订单不会被修改。",
    ),
}


class CodeUnavailable(Exception):
    """No code can be sent now: the customer is locked or asked for too many codes."""

    def __init__(self, reason: Literal["locked", "too_many"]) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class CodeCheck:
    outcome: Literal["ok", "wrong", "locked", "expired", "none"]
    attempts_left: int = 0
    customer_id: str = ""  # whom the code was sent to (set with "ok")


def email_mask(email: str) -> str:
    """``james.li@example.com`` -> ``j***@example.com``: enough to recognise, not to learn."""
    local, _, domain = email.partition("@")
    return f"{local[:1]}***@{domain}" if domain else "***"


def _cache_key(kind: str, customer_id: str) -> str:
    digest = hashlib.sha256(customer_id.encode("utf-8")).hexdigest()[:24]
    return f"{settings.TIERDESK_STATE_PREFIX}:verify:{kind}:{digest}"


def _code_hash(customer_id: str, salt: str, code: str) -> str:
    message = f"{customer_id}\x00{salt}\x00{code}".encode()
    return hmac.new(settings.SECRET_KEY.encode(), message, hashlib.sha256).hexdigest()


def proof_is_strong(*, state: dict[str, Any], identity: str, customer_id: str) -> bool:
    """Has this conversation proved strongly that it is ``customer_id``'s shopper?"""
    if not customer_id:
        return False
    if identity in STRONG_METHODS:
        return True
    proof = state.get(_PROOF_KEY) or {}
    return (
        proof.get("customer_id") == customer_id
        and time.time() - float(proof.get("at", 0)) <= settings.TIERDESK_VERIFY_PROOF_TTL_S
    )


def customer_locked(*, customer_id: str) -> bool:
    return bool(cache.get(_cache_key("lock", customer_id)))


def customer_ref(customer_id: str) -> str:
    """A customer's id in the logs: stable, but not the id itself (logs travel further)."""
    return hashlib.sha256(customer_id.encode("utf-8")).hexdigest()[:12]


def code_send(*, state: dict[str, Any], customer: Customer, language: str) -> str:
    """Email a fresh one-time code to the customer; return the masked address.

    Raises ``CodeUnavailable`` when the customer is locked or has had too many codes
    this hour (both logged). Replaces any earlier code of this conversation."""
    cid = customer.customer_id
    if customer_locked(customer_id=cid):
        logger.warning("verify code refused: customer locked customer=%s", customer_ref(cid))
        raise CodeUnavailable("locked")
    sends_key = _cache_key("sends", cid)
    cache.add(sends_key, 0, timeout=3600)
    try:
        sends = cache.incr(sends_key)
    except ValueError:  # expired between add and incr
        cache.set(sends_key, 1, timeout=3600)
        sends = 1
    if sends > settings.TIERDESK_VERIFY_CODES_PER_HOUR:
        logger.warning("verify code refused: too many codes customer=%s", customer_ref(cid))
        raise CodeUnavailable("too_many")
    code = f"{secrets.randbelow(10**CODE_DIGITS):0{CODE_DIGITS}d}"
    salt = secrets.token_hex(8)
    state[_STATE_KEY] = {
        "customer_id": cid,
        "salt": salt,
        "hash": _code_hash(cid, salt, code),
        "expires": time.time() + settings.TIERDESK_VERIFY_CODE_TTL_S,
        "attempts": 0,
    }
    subject, body = EMAIL_TEXT.get(language, EMAIL_TEXT["en"])
    minutes = max(1, settings.TIERDESK_VERIFY_CODE_TTL_S // 60)
    email_send(
        Email(
            subject=subject,
            body=body.format(code=code, minutes=minutes),
            to=[customer.email],
            kind="code",
        )
    )
    logger.info("verify code sent customer=%s", customer_ref(cid))
    return email_mask(customer.email)


def code_pending(*, state: dict[str, Any]) -> bool:
    return bool(state.get(_STATE_KEY))


def code_in_text(text: str) -> str | None:
    match = _CODE_RE.search(text)
    return match.group(1) if match else None


def code_check(*, state: dict[str, Any], text: str) -> CodeCheck:
    """Check the code the shopper typed against the pending one (attempts counted).

    ``ok`` records the strong proof in ``state``; the fifth wrong attempt (by default)
    drops the code and locks the customer for TIERDESK_VERIFY_LOCK_S."""
    pending = state.get(_STATE_KEY)
    if not pending:
        return CodeCheck("none")
    cid = str(pending["customer_id"])
    if customer_locked(customer_id=cid):
        state.pop(_STATE_KEY, None)
        return CodeCheck("locked")
    if time.time() > float(pending["expires"]):
        state.pop(_STATE_KEY, None)
        logger.info("verify code expired customer=%s", customer_ref(cid))
        return CodeCheck("expired")
    typed = code_in_text(text) or ""
    if typed and hmac.compare_digest(_code_hash(cid, str(pending["salt"]), typed), pending["hash"]):
        state.pop(_STATE_KEY, None)
        state[_PROOF_KEY] = {"customer_id": cid, "at": time.time()}
        logger.info("verify code accepted customer=%s", customer_ref(cid))
        return CodeCheck("ok", customer_id=cid)
    pending["attempts"] = int(pending["attempts"]) + 1
    left = settings.TIERDESK_VERIFY_CODE_ATTEMPTS - pending["attempts"]
    logger.warning(
        "verify code wrong customer=%s attempts=%s", customer_ref(cid), pending["attempts"]
    )
    if left <= 0:
        state.pop(_STATE_KEY, None)
        cache.set(_cache_key("lock", cid), 1, timeout=settings.TIERDESK_VERIFY_LOCK_S)
        logger.warning("verify locked customer after wrong codes customer=%s", customer_ref(cid))
        return CodeCheck("locked")
    return CodeCheck("wrong", attempts_left=left)
