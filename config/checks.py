"""Safe defaults as Django system checks (docs/security.md, "Safe defaults").

A development install is allowed its conveniences (DEBUG, the published development
keys, demo impersonation) only while nobody else can reach it: as soon as
``ALLOWED_HOSTS`` names a host other than this machine, these become errors, so
``manage.py check`` fails and ``config/asgi.py`` refuses to start Daphne.

- ``tierdesk.E001``: DEBUG on a non-local host (tracebacks with settings to anyone).
- ``tierdesk.E002``: a key printed in Tierdesk's source (``DEV_SECRET_KEY``) as the
  Django secret key or the shopper token key on a non-local host.
- ``tierdesk.E003``: the demo shop's impersonation with a non-demo order backend.
- ``tierdesk.W001``: the demo shop's impersonation on a non-local host.
- ``tierdesk.W002``: order reads by typed email alone on a non-local host.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning, register

from config.settings.security import DEV_SECRET_KEY

# Names that only this machine answers to; "*.localhost" resolves to loopback too.
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]", "testserver"})


def host_is_local(host: str) -> bool:
    name = host.strip().lower()
    return name in LOCAL_HOSTS or (name.endswith(".localhost") and not name.startswith("."))


def public_hosts(hosts: list[str]) -> list[str]:
    """The entries of ALLOWED_HOSTS that other machines can reach ("*" is one)."""
    return [host for host in hosts if host.strip() and not host_is_local(host)]


def safety_problems(conf: Any = settings) -> list[CheckMessage]:
    """Every safe-default problem of ``conf`` (the settings, or a stand-in in tests)."""
    problems: list[CheckMessage] = []
    public = public_hosts(list(conf.ALLOWED_HOSTS))
    where = ", ".join(public)
    if public and conf.DEBUG:
        problems.append(
            Error(
                f"DEBUG is on while ALLOWED_HOSTS names a public host ({where}): "
                "error pages would show settings and code to anyone.",
                hint="Set TIERDESK_ENV=production (or DJANGO_DEBUG=false).",
                id="tierdesk.E001",
            )
        )
    published = [
        name
        for name, value in (
            ("DJANGO_SECRET_KEY", conf.SECRET_KEY),
            ("TIERDESK_SHOPPER_TOKEN_KEY", conf.TIERDESK_SHOPPER_TOKEN_KEY),
        )
        if value == DEV_SECRET_KEY
    ]
    if public and published:
        problems.append(
            Error(
                f"{' and '.join(published)} is the development key printed in Tierdesk's "
                f"source, on a public host ({where}): anyone can sign sessions and "
                "shopper tokens.",
                hint="Set each to a long random secret, e.g. "
                "`python -c 'import secrets; print(secrets.token_urlsafe(50))'`.",
                id="tierdesk.E002",
            )
        )
    if conf.TIERDESK_DEMO_SHOP and conf.TIERDESK_ORDER_BACKEND != "django":
        problems.append(
            Error(
                "TIERDESK_DEMO_SHOP is on with the order backend "
                f"{conf.TIERDESK_ORDER_BACKEND!r}: the demo page's /?as=<customer_id> "
                "would let anyone read and change a real shopper's orders.",
                hint="Unset TIERDESK_DEMO_SHOP; it is for the demo shop's own tables only.",
                id="tierdesk.E003",
            )
        )
    if public and conf.TIERDESK_DEMO_IMPERSONATION:
        problems.append(
            Warning(
                f"TIERDESK_DEMO_SHOP is on for a public host ({where}): anyone can sign "
                "in as any demo shopper with /?as=<customer_id>.",
                hint="Fine for a public demo of the demo shop; unset it for a real shop.",
                id="tierdesk.W001",
            )
        )
    if public and conf.TIERDESK_CHAT_IDENTITY_READS:
        problems.append(
            Warning(
                f"TIERDESK_CHAT_IDENTITY_READS is on for a public host ({where}): "
                "anyone who types a shopper's email can read their orders.",
                hint="Unset it so order details need the shop's token or an emailed code.",
                id="tierdesk.W002",
            )
        )
    return problems


@register("security")
def safe_defaults_check(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    return safety_problems()


def refuse_unsafe_start() -> None:
    """Stop a server process on any safe-default error (``manage.py check`` is not run
    by Daphne or Celery); warnings are left to ``check``."""
    from django.core.exceptions import ImproperlyConfigured

    errors = [problem for problem in safety_problems() if problem.is_serious()]
    if errors:
        raise ImproperlyConfigured(
            "refusing to start: "
            + " ".join(f"{error.id}: {error.msg} {error.hint}" for error in errors)
        )
