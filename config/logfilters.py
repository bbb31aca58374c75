"""Logging filters named in settings.LOGGING."""

from __future__ import annotations

import logging

from django.core.exceptions import PermissionDenied


class PermissionDeniedOneLine(logging.Filter):
    """A refused request is logged as one line, not with its traceback.

    Django's ``django.request`` logger attaches the ``PermissionDenied`` exception to the
    "Forbidden (Permission denied)" warning, so every denied /operators/ visit printed
    a full traceback. The refusal is expected behaviour, not a fault: keep the line,
    drop the stack."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], PermissionDenied):
            record.exc_info = None
            record.exc_text = None
        return True


class NotReadyQuiet(logging.Filter):
    """A readiness probe's 503 while the process warms up is not an error.

    ``/readyz`` answers 503 until the models are loaded and warmed (minutes on a first
    start); ``make run``, systemd and load balancers poll it every second, and Django
    logged each poll as ``ERROR django.request Service Unavailable: /readyz``, a page of
    errors in front of the operator for a start that is going as it should. Only that
    one response is dropped: a 503 anywhere else, or any other status, is logged."""

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        path = getattr(request, "path", "")
        return not (getattr(record, "status_code", None) == 503 and path == "/readyz")
