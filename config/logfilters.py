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
