"""Human handoff and the agent desk (docs/desk.md): timeouts, business hours, tickets
and the email they go out by."""

from __future__ import annotations

from .core import PRODUCTION, TIERDESK_ENV
from .env import env_bool, env_int, env_str

# --- human handoff and the agent desk (docs/desk.md) ----------------------------------------
# A claimed conversation whose agent's desk has been silent (no connection, no
# heartbeat) this long goes back to the queue, at its old place.
TIERDESK_HANDOFF_AGENT_TIMEOUT_S = env_int("TIERDESK_HANDOFF_AGENT_TIMEOUT_S", 60)
# The wait estimate's handle time per conversation until the desk has resolved some.
TIERDESK_HANDOFF_DEFAULT_HANDLE_S = env_int("TIERDESK_HANDOFF_DEFAULT_HANDLE_S", 240)
# When people answer: "mon-fri 09:00-18:00" (days mon..sun, ranges or lists joined by
# commas; several windows separated by ";") in TIERDESK_BUSINESS_TIMEZONE. Outside
# these hours, or with no agent online, the widget offers to leave a ticket.
TIERDESK_BUSINESS_HOURS = env_str("TIERDESK_BUSINESS_HOURS", "mon-sun 00:00-24:00")
TIERDESK_BUSINESS_TIMEZONE = env_str("TIERDESK_BUSINESS_TIMEZONE", "UTC")
# Tickets (a shopper's email and question when nobody is online) are emailed here,
# through Django's email framework: the console on the embedded default, SMTP with
# EMAIL_HOST etc. in production.
TIERDESK_SHOP_EMAIL = env_str("TIERDESK_SHOP_EMAIL", "support@shop.example")
DEFAULT_FROM_EMAIL = env_str("DJANGO_DEFAULT_FROM_EMAIL", "tierdesk@shop.example")
EMAIL_BACKEND = env_str("DJANGO_EMAIL_BACKEND") or (
    "django.core.mail.backends.smtp.EmailBackend"
    if PRODUCTION
    else "django.core.mail.backends.console.EmailBackend"
)
EMAIL_HOST = env_str("DJANGO_EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("DJANGO_EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("DJANGO_EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("DJANGO_EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("DJANGO_EMAIL_USE_TLS", False)
# Seconds the SMTP backend waits on the mail server before it gives up (Django's
# EMAIL_TIMEOUT; the task then retries).
EMAIL_TIMEOUT = env_int("DJANGO_EMAIL_TIMEOUT", 10)
# One-time codes, tickets and ticket answers go out through the Celery task
# chatbot.email_send (chatbot/mail.py), never from a turn's thread. Test runs send at
# once (the locmem backend) so a test can read what was sent.
TIERDESK_EMAIL_ASYNC = env_bool("TIERDESK_EMAIL_ASYNC", TIERDESK_ENV != "test")
