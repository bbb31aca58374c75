"""The project's Celery app, tuned for the kill -9 test only: the broker gives an
unacknowledged task back after 5 s (not an hour) and sweeps every second, so the test
sees the re-delivery within its timeout. Everything else is the production app."""

from __future__ import annotations

from config.celery import app

app.conf.broker_transport_options = {
    "visibility_timeout": 5,
    "unacked_restore_interval": 1,
    "unacked_restore_throttle": 1,
}
