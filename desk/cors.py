"""CORS for ``POST /tickets/``, the widget's ticket form on a shop's own pages.

A shop embeds the widget from Tierdesk's host on pages of its own origin
(``TIERDESK_WIDGET_ORIGINS``, docs/widget.md). The form's JSON POST is then
cross-origin, so the browser first sends a preflight ``OPTIONS``: it is answered here
(the view itself takes only POST) with ``Access-Control-Allow-Origin: <that origin>``
for a listed shop site, and refused with a 403 that names the setting for any other.
Tierdesk's own pages (the same host) are always allowed. The answer varies with
``Origin``, so a cache never hands one site's answer to another.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_vary_headers

logger = logging.getLogger(__name__)

PREFLIGHT_MAX_AGE_S = 600

View = Callable[[HttpRequest], HttpResponse]


def origin_allowed(request: HttpRequest, origin: str) -> bool:
    """A listed shop site, or Tierdesk's own host (the demo page)."""
    if origin.lower() in settings.TIERDESK_WIDGET_ORIGINS:
        return True
    try:
        host = request.get_host()
    except DisallowedHost:
        return False
    return origin.split("://", 1)[-1].lower() == host.lower()


def _refused(request: HttpRequest, origin: str) -> HttpResponse:
    # One line, no traceback: a misconfigured embed would otherwise flood the log.
    logger.warning(
        "%s %s refused: origin %s is not in TIERDESK_WIDGET_ORIGINS",
        request.method,
        request.path,
        origin,
    )
    return HttpResponse(
        f"origin {origin} is not in TIERDESK_WIDGET_ORIGINS\n",
        status=403,
        content_type="text/plain; charset=utf-8",
    )


def widget_cors(view: View) -> View:
    """Answer the preflight and add the CORS header for the embedding shop sites."""

    @functools.wraps(view)
    def wrapped(request: HttpRequest) -> HttpResponse:
        origin = request.headers.get("Origin", "")
        allowed = not origin or origin_allowed(request, origin)
        if not allowed:
            return _refused(request, origin)
        if request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers:
            response = HttpResponse(status=204)
            response["Access-Control-Allow-Methods"] = "POST"
            response["Access-Control-Allow-Headers"] = "Content-Type"
            response["Access-Control-Max-Age"] = str(PREFLIGHT_MAX_AGE_S)
        else:
            response = view(request)
        if origin:
            response["Access-Control-Allow-Origin"] = origin
        patch_vary_headers(response, ["Origin"])
        return response

    return wrapped
