from __future__ import annotations

from django.http import HttpRequest, JsonResponse

from inference.warmup import READINESS


def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness: the process answers."""
    return JsonResponse({"ok": True})


def readyz(request: HttpRequest) -> JsonResponse:
    """Readiness: models loaded and warmed up (503 until then)."""
    state = READINESS.as_dict()
    return JsonResponse(state, status=200 if state["ready"] else 503)
