"""Email through Celery with a timeout (chatbot/mail.py, the task chatbot.email_send):
a turn only queues the message on the real broker; the task sends it through Django's
email framework, gives up on a silent mail server after EMAIL_TIMEOUT and retries one
that fails."""

from __future__ import annotations

import smtplib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict
from typing import Any

import pytest
from django.core import mail

from chatbot.mail import MAX_RETRIES, Email, email_deliver, email_send
from chatbot.tasks import email_send as email_send_task
from config.celery import app

EMAIL = Email(subject="Your code", body="Your code is 123456", to=["mei@example.com"], kind="code")


def test_tests_send_at_once_through_the_locmem_backend(settings: Any) -> None:
    assert settings.TIERDESK_EMAIL_ASYNC is False  # TIERDESK_ENV=test
    email_send(EMAIL)
    assert [(m.subject, m.to) for m in mail.outbox] == [("Your code", ["mei@example.com"])]
    with pytest.raises(ValueError, match="recipient"):
        email_send(Email(subject="x", body="y", to=[]))


def _drain(queue_name: str = "celery") -> list[Any]:
    messages = []
    with app.connection_for_read() as conn:
        queue = conn.SimpleQueue(queue_name)
        try:
            while True:
                message = queue.get(timeout=2)
                messages.append(message)
                message.ack()
        except queue.Empty:
            pass
        finally:
            queue.close()
    return messages


def test_async_only_queues_the_message_and_the_task_sends_it(settings: Any) -> None:
    settings.TIERDESK_EMAIL_ASYNC = True
    _drain()  # an earlier run's leftovers
    email_send(EMAIL)
    assert mail.outbox == []  # nothing was sent from the caller's thread
    queued = [m for m in _drain() if m.headers.get("task") == "chatbot.email_send"]
    assert len(queued) == 1
    args, kwargs, _ = queued[0].payload
    # What the worker would run, here in this process: the same task, the same payload.
    email_send_task.apply(args=args, kwargs=kwargs).get()
    assert [(m.body, m.to) for m in mail.outbox] == [(EMAIL.body, EMAIL.to)]


@pytest.fixture
def mail_server() -> Iterator[tuple[int, list[float], dict[str, str]]]:
    """A TCP server on a free port; mode "silent" accepts and says nothing, "hangup"
    accepts and closes at once. Records when each connection came."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    seen: list[float] = []
    mode = {"mode": "silent"}
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            seen.append(time.monotonic())
            if mode["mode"] == "hangup":
                conn.close()
            else:
                held.append(conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1], seen, mode
    stop.set()
    thread.join(timeout=2)
    for conn in held:
        conn.close()
    listener.close()


def smtp(settings: Any, port: int, timeout: int) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", port, timeout


def test_a_silent_mail_server_is_given_up_after_the_timeout(
    settings: Any, mail_server: tuple[int, list[float], dict[str, str]]
) -> None:
    port, seen, _ = mail_server
    smtp(settings, port, timeout=1)
    started = time.monotonic()
    with pytest.raises(smtplib.SMTPServerDisconnected, match="timed out"):
        email_deliver(EMAIL)
    assert len(seen) == 1 and time.monotonic() - started < 5


def test_the_task_retries_a_failing_mail_server_then_gives_up(
    settings: Any, mail_server: tuple[int, list[float], dict[str, str]]
) -> None:
    port, seen, mode = mail_server
    mode["mode"] = "hangup"
    smtp(settings, port, timeout=2)
    result = email_send_task.apply(args=[asdict(EMAIL)])
    assert result.failed()
    assert len(seen) == 1 + MAX_RETRIES  # the first try and every retry reached the server
    assert mail.outbox == []
