"""The page a staff member sees when django-axes refuses a sign-in after too many failed
attempts (``AXES_LOCKOUT_CALLABLE``; config/settings/security.py)."""

from __future__ import annotations

import math
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

# 429 Too Many Requests, as django-axes answers by default.
LOCKED_OUT = 429


def lockout_response(
    request: HttpRequest,
    original_response: HttpResponse | None = None,
    credentials: dict[str, Any] | None = None,
) -> HttpResponse:
    """Say what happened and for how long, in the staff member's language (the admin's
    Accept-Language or language cookie); scripts get the same as JSON."""
    seconds = int(settings.AXES_COOLOFF_TIME.total_seconds())
    minutes = max(1, math.ceil(seconds / 60))
    failures = int(settings.AXES_FAILURE_LIMIT)
    if request.headers.get("x-requested-with") == "XMLHttpRequest" or (
        "application/json" in request.headers.get("accept", "")
    ):
        response: HttpResponse = JsonResponse(
            {"error": "locked_out", "failures": failures, "retry_after_s": seconds},
            status=LOCKED_OUT,
        )
    else:
        context = {"failures": failures, "minutes": minutes, "login_url": settings.LOGIN_URL}
        response = render(request, "frontend/lockout.html", context, status=LOCKED_OUT)
    response["Retry-After"] = str(seconds)
    response["Cache-Control"] = "no-store"
    return response
