"""The chat: the WebSocket protocol's limits, the order system, shopper identity,
the bot check and personal data retention."""

from __future__ import annotations

import json

from .core import TIERDESK_ENV
from .env import ImproperlyConfiguredEnv, env_bool, env_float, env_int, env_str

# --- chat protocol --------------------------------------------------------------------
TIERDESK_MAX_MESSAGE_CHARS = env_int("TIERDESK_MAX_MESSAGE_CHARS", 2000)
# A frame larger than this is refused before it is parsed (bytes, whole JSON frame).
TIERDESK_MAX_FRAME_BYTES = env_int("TIERDESK_MAX_FRAME_BYTES", 16384)
TIERDESK_HISTORY_ON_CONNECT = env_int("TIERDESK_HISTORY_ON_CONNECT", 50)
# Per-chunk pacing in the widget (docs/product.md: 50 ms, 0 disables it). Sent to the client.
TIERDESK_STREAM_PACING_MS = env_int("TIERDESK_STREAM_PACING_MS", 50)
# While a model streams a reply, its text so far is written this often, so a server
# killed mid-reply still shows the shopper what was sent (0 disables).
TIERDESK_REPLY_CHECKPOINT_MS = env_int("TIERDESK_REPLY_CHECKPOINT_MS", 1000)
# How long a turn may take end to end before the reply is cut and marked incomplete.
TIERDESK_TURN_TIMEOUT_S = env_float("TIERDESK_TURN_TIMEOUT_S", 60.0)

# --- order system ---------------------------------------------------------------------
# "django": the demo shop's own tables. "http": a shop's real API (docs/order-api.md).
TIERDESK_ORDER_BACKEND = env_str("TIERDESK_ORDER_BACKEND", "django")
TIERDESK_ORDER_API_URL = env_str("TIERDESK_ORDER_API_URL", "")
TIERDESK_ORDER_API_KEY = env_str("TIERDESK_ORDER_API_KEY", "")
TIERDESK_ORDER_API_TIMEOUT_S = env_float("TIERDESK_ORDER_API_TIMEOUT_S", 5.0)
_ORDER_SERVICES = {
    "django": "chatbot.orders.backends.DjangoOrderService",
    "http": "chatbot.orders.backends.HttpOrderService",
}
if TIERDESK_ORDER_BACKEND not in _ORDER_SERVICES:
    raise ImproperlyConfiguredEnv(
        f"TIERDESK_ORDER_BACKEND={TIERDESK_ORDER_BACKEND!r} is not an order backend: "
        f"use {' or '.join(_ORDER_SERVICES)} (docs/order-api.md)"
    )
ORDER_SERVICE = _ORDER_SERVICES[TIERDESK_ORDER_BACKEND]
# Seconds between Celery beat's catalogue syncs from the shop's API (``GET products``,
# docs/catalogue.md); 0 (the default) syncs only on ``manage.py catalogue_sync``.
TIERDESK_CATALOGUE_SYNC_S = env_float("TIERDESK_CATALOGUE_SYNC_S", 0.0)
# The demo shop's mode: its page (frontend/views.py) signs a shopper token for whoever
# ``/?as=<customer_id>`` names, so anyone can be any demo shopper. Off unless a demo says
# so (``make run`` does); never with a real shop's orders: with a non-demo order backend
# the page signs nobody in and ``manage.py check`` refuses the pair (config/checks.py).
TIERDESK_DEMO_SHOP = env_bool("TIERDESK_DEMO_SHOP", False)
TIERDESK_DEMO_IMPERSONATION = TIERDESK_DEMO_SHOP and TIERDESK_ORDER_BACKEND == "django"
TIERDESK_SHOPPER_TOKEN_MAX_AGE_S = env_int("TIERDESK_SHOPPER_TOKEN_MAX_AGE_S", 3600)


def _jwt_keys() -> dict[str, str]:
    try:
        return {
            str(kid): str(key)
            for kid, key in json.loads(env_str("TIERDESK_SHOPPER_JWT_KEYS") or "{}").items()
        }
    except (ValueError, AttributeError) as exc:
        raise ImproperlyConfiguredEnv(
            'TIERDESK_SHOPPER_JWT_KEYS: JSON like {"2026-12": "a long random secret"}'
        ) from exc


# HS256 JWT shopper tokens: JSON {"<kid>": "<secret>", ...}; the JWT's "kid" header
# picks the key, so a shop can rotate keys (docs/identity.md). Empty: JWTs are refused.
TIERDESK_SHOPPER_JWT_KEYS: dict[str, str] = _jwt_keys()

# --- shopper identity: who may read, and who may change, an order (docs/identity.md) ------
# Email, or name + zip, typed in the chat finds a shopper but proves nothing: by default
# (false) reading their orders needs the shop's token or the emailed one-time code. True
# lets the typed identity READ orders (never change them); a shop opts in knowingly.
TIERDESK_CHAT_IDENTITY_READS = env_bool("TIERDESK_CHAT_IDENTITY_READS", False)
# What CHANGING an order (cancel, new address) needs. "code" (the safe default): the
# shop's signed token, or a one-time code emailed to the shopper. "token": the shop's
# signed token only. Knowing an email is never enough.
TIERDESK_ORDER_CHANGE_PROOF = env_str("TIERDESK_ORDER_CHANGE_PROOF") or "code"
if TIERDESK_ORDER_CHANGE_PROOF not in {"code", "token"}:
    raise ImproperlyConfiguredEnv(
        f"TIERDESK_ORDER_CHANGE_PROOF={TIERDESK_ORDER_CHANGE_PROOF!r}: use code|token"
    )
# The one-time code: lifetime, wrong attempts before the customer is locked, the lock,
# codes one customer may be sent per hour (mail bombing), and how long a typed code
# counts as proof for the conversation.
TIERDESK_VERIFY_CODE_TTL_S = env_int("TIERDESK_VERIFY_CODE_TTL_S", 600)
TIERDESK_VERIFY_CODE_ATTEMPTS = env_int("TIERDESK_VERIFY_CODE_ATTEMPTS", 5)
TIERDESK_VERIFY_LOCK_S = env_int("TIERDESK_VERIFY_LOCK_S", 900)
TIERDESK_VERIFY_CODES_PER_HOUR = env_int("TIERDESK_VERIFY_CODES_PER_HOUR", 5)
TIERDESK_VERIFY_PROOF_TTL_S = env_int("TIERDESK_VERIFY_PROOF_TTL_S", 1800)

# --- behavioural bot check (docs/botcheck.md) ----------------------------------------------
# off: no check. monitor: score and store, refuse nothing. challenge: ask suspicious
# messages for a light challenge (a click on a button) and refuse clients without a
# fingerprint. enforce: also refuse what scores as a bot. Test runs default to off
# (the suite's WebSocket tests send no fingerprint); tests/chatbot/botcheck turn it on.
TIERDESK_BOTCHECK = env_str("TIERDESK_BOTCHECK", "off" if TIERDESK_ENV == "test" else "enforce")
if TIERDESK_BOTCHECK not in {"off", "monitor", "challenge", "enforce"}:
    raise ImproperlyConfiguredEnv(
        f"TIERDESK_BOTCHECK={TIERDESK_BOTCHECK!r}: use off|monitor|challenge|enforce"
    )
# Strictness: bot scores (sums of rule weights, chatbot/botcheck/score.py) at or above
# which a message is refused (enforce) or challenged. Lower is stricter.
TIERDESK_BOTCHECK_REFUSE_AT = env_float("TIERDESK_BOTCHECK_REFUSE_AT", 0.8)
TIERDESK_BOTCHECK_CHALLENGE_AT = env_float("TIERDESK_BOTCHECK_CHALLENGE_AT", 0.5)
# Stored feature vectors (never raw events) are deleted after this many days.
TIERDESK_BOTCHECK_RETENTION_DAYS = env_int("TIERDESK_BOTCHECK_RETENTION_DAYS", 30)

# --- personal data retention (chatbot/privacy.py, docs/security.md) ------------------------
# Days each kind of personal data is kept; 0 keeps it for ever. Celery beat runs
# chatbot.privacy_purge daily. A conversation silent for MESSAGES_DAYS goes whole;
# client IPs and user agents are blanked after CLIENT_IP_DAYS; ratings after FEEDBACK_DAYS;
# desk tickets after TICKETS_DAYS.
TIERDESK_RETENTION_MESSAGES_DAYS = env_int("TIERDESK_RETENTION_MESSAGES_DAYS", 365)
TIERDESK_RETENTION_CLIENT_IP_DAYS = env_int("TIERDESK_RETENTION_CLIENT_IP_DAYS", 30)
TIERDESK_RETENTION_FEEDBACK_DAYS = env_int("TIERDESK_RETENTION_FEEDBACK_DAYS", 365)
# Desk tickets (a shopper's email, question and the answer) after this many days from
# the last thing that happened to them (left, or answered).
TIERDESK_RETENTION_TICKETS_DAYS = env_int("TIERDESK_RETENTION_TICKETS_DAYS", 365)

# --- shoppers' photos (chatbot/attachments.py, docs/widget.md "Photos") ---------------------
# Largest photo a shopper may attach, in bytes (the upload is refused past it, before
# it is read). The type is read from the bytes (JPEG, PNG, WebP, HEIC); the stored file is
# re-encoded without EXIF (no location). Files go to STORAGES["default"]
# (TIERDESK_MEDIA_STORAGE) and are deleted with their message, conversation or ticket
# (retention, erase).
TIERDESK_ATTACHMENT_MAX_BYTES = env_int("TIERDESK_ATTACHMENT_MAX_BYTES", 10 * 1024 * 1024)
# Photos one conversation may hold: a cap on what one session key can store.
TIERDESK_ATTACHMENT_MAX_PER_CONVERSATION = env_int("TIERDESK_ATTACHMENT_MAX_PER_CONVERSATION", 20)
# How long the widget's signed link to a shopper's own photo works (it is re-signed on
# every reconnect); staff see photos at /desk/ only.
TIERDESK_ATTACHMENT_LINK_S = env_int("TIERDESK_ATTACHMENT_LINK_S", 24 * 3600)
