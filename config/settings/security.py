"""Secrets, hosts and the HTTPS settings; production refuses to start without its secrets.
Staff logins are throttled (django-axes) and every page carries a Content-Security-Policy
(django-csp)."""

from __future__ import annotations

from datetime import timedelta

from csp.constants import NONE, SELF

from .core import PRODUCTION, TIERDESK_ENV
from .env import ImproperlyConfiguredEnv, env_bool, env_int, env_list, env_origins, env_str

DEV_SECRET_KEY = "dev-only-insecure-secret-key-change-me-0123456789abcdefghijklmnop"
# An empty value (as in .env.example) means "not set", never an empty key.
SECRET_KEY = env_str("DJANGO_SECRET_KEY") or ("" if PRODUCTION else DEV_SECRET_KEY)
# The shop signs shopper tokens with this key (HMAC-SHA256); see docs/identity.md.
TIERDESK_SHOPPER_TOKEN_KEY = env_str("TIERDESK_SHOPPER_TOKEN_KEY") or (
    "" if PRODUCTION else DEV_SECRET_KEY
)
if PRODUCTION:
    # Secrets come only from the environment: refuse to start without them rather
    # than run a shop on a key that is printed in our source.
    missing = [
        name
        for name, value in (
            ("DJANGO_SECRET_KEY", SECRET_KEY),
            ("TIERDESK_SHOPPER_TOKEN_KEY", TIERDESK_SHOPPER_TOKEN_KEY),
        )
        if not value or value == DEV_SECRET_KEY
    ]
    if missing:
        raise ImproperlyConfiguredEnv(
            "production refuses to start without secrets: set " + ", ".join(missing)
        )

DEBUG = env_bool("DJANGO_DEBUG", TIERDESK_ENV == "development")
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

# The shop's own sites that embed the widget from Tierdesk's host (docs/widget.md, "On
# the shop's own domain"), as origins: "https://www.shop.example.com", with the port
# where it is not the scheme's default. The WebSocket origin check (config/origin.py)
# and the ticket form's endpoint (desk/cors.py) admit these pages besides Tierdesk's
# own (ALLOWED_HOSTS). The widget's static files are public and answer any origin.
TIERDESK_WIDGET_ORIGINS = env_origins("TIERDESK_WIDGET_ORIGINS")

SESSION_COOKIE_SECURE = PRODUCTION
CSRF_COOKIE_SECURE = PRODUCTION
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", PRODUCTION)
SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", 31536000 if PRODUCTION else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = PRODUCTION
SECURE_HSTS_PRELOAD = PRODUCTION
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if PRODUCTION else None

# --- staff logins (docs/security.md, "Safe defaults") -----------------------------------------
# /admin/login/ is also the desk's and the console's login. After this many failed
# attempts from one client address, that address is refused for the lockout time
# (frontend/lockout.py says so, in the staff member's language). Attempts are kept in the
# database (admin: Axes), so every Daphne process counts the same ones.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
TIERDESK_ADMIN_LOGIN_FAILURES = env_int("TIERDESK_ADMIN_LOGIN_FAILURES", 5)
TIERDESK_ADMIN_LOCKOUT_MINUTES = env_int("TIERDESK_ADMIN_LOCKOUT_MINUTES", 15)
if TIERDESK_ADMIN_LOGIN_FAILURES < 1 or TIERDESK_ADMIN_LOCKOUT_MINUTES < 1:
    raise ImproperlyConfiguredEnv(
        "TIERDESK_ADMIN_LOGIN_FAILURES and TIERDESK_ADMIN_LOCKOUT_MINUTES must be at least 1"
    )
AXES_FAILURE_LIMIT = TIERDESK_ADMIN_LOGIN_FAILURES
AXES_COOLOFF_TIME = timedelta(minutes=TIERDESK_ADMIN_LOCKOUT_MINUTES)
# The client address is REMOTE_ADDR: behind the proxy, Daphne's --proxy-headers sets it
# from X-Forwarded-For (docs/deployment.md).
AXES_LOCKOUT_PARAMETERS = ["ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "frontend.lockout.lockout_response"

# --- Content-Security-Policy (django-csp) -------------------------------------------------------
# Every page Tierdesk serves (the demo shop and its widget, the console, the desk, the
# admin) runs only its own scripts: no inline script, no other origin. The widget's bot
# check compiles botcheck.wasm ('wasm-unsafe-eval'); its WebSocket and fetches go to this
# origin ('self' covers ws:/wss: on it). Styles allow inline attributes (the admin's and
# the charts'), which run no code.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF, "'wasm-unsafe-eval'"],
        "style-src": [SELF, "'unsafe-inline'"],
        "img-src": [SELF, "data:"],
        "connect-src": [SELF],
        "font-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [SELF],
    }
}
