"""The Django project: settings, ASGI and URL entry points, the Celery app."""

from .celery import app as celery_app

__all__ = ("celery_app",)
