"""Typed refusals: everything the chat server declines to do for a frame, and what
the shopper is told about it.

Services raise a ``Refusal`` (or return one that follows an ack); ``refusal_frame``
renders any of them to the ``error`` frame of docs/protocol.md, and it is the only
place that builds one. Like Zulip's ``JsonableError``: the error carries its code,
its shopper-facing message and its extra fields; the transport only renders it.

Other modules' errors are refusals too: ``protocol.ProtocolError`` (a bad frame),
``feedback.FeedbackError`` (``unknown_message``) and
``orders.identity.ShopperTokenError`` (``bad_token``).

A leaf module (no imports from the app) so that every layer of the app can raise one.

The message is an English msgid (marked with ``gettext_noop`` for makemessages) and its
``%(name)s`` parameters; ``refusal_frame`` translates it into the conversation's
language (docs/i18n.md), so a refusal raised anywhere needs no language of its own.
"""

from __future__ import annotations

from typing import Any

from django.utils import translation
from django.utils.translation import gettext, gettext_noop

# A conversation's language (Conversation.language) -> Django's language code.
DJANGO_LANGUAGES = {"en": "en", "zh": "zh-hans"}


def django_language(language: str | None) -> str:
    """The Django language for a conversation's ``language`` (English if unknown)."""
    return DJANGO_LANGUAGES.get((language or "en").split("-")[0].lower(), "en")


class Refusal(Exception):
    """A frame the server refuses, as one ``error`` frame. The connection stays open
    unless ``close_code`` is set (the consumer closes with it after the frame)."""

    code: str = "internal_error"
    close_code: int | None = None

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        params: dict[str, Any] | None = None,
        **fields: Any,
    ) -> None:
        super().__init__(message % params if params else message)
        self.message = message  # the msgid
        self.params = params or {}
        if code is not None:
            self.code = code
        # Extra fields of the frame, in wire order (``reply_to``, ``message_id``, ...).
        self.fields: dict[str, Any] = fields


def refusal_text(refusal: Refusal, language: str | None = "en") -> str:
    """The refusal's message in a conversation's language (``en``, ``zh``)."""
    with translation.override(django_language(language)):
        text = gettext(refusal.message)
    return text % refusal.params if refusal.params else text


def refusal_frame(refusal: Refusal, language: str | None = "en") -> dict[str, Any]:
    """The ``error`` frame of a refusal: the one place error frames are built. The
    message is in the conversation's ``language``; the code stays the same."""
    return {
        "type": "error",
        "code": refusal.code,
        "message": refusal_text(refusal, language),
        **refusal.fields,
    }


# -- storing and answering a message -------------------------------------------------------


class StoreUnavailable(Refusal):
    """PostgreSQL restarting or unreachable: the message is NOT stored, so there is no
    ack; the client resends with the same id (idempotent)."""

    code = "store_unavailable"

    def __init__(self, *, reply_to: str, retry_after: int = 2) -> None:
        super().__init__(
            gettext_noop("We couldn't save your message just now; it will be sent again."),
            reply_to=reply_to,
            retry_after=retry_after,
        )
        self.reply_to, self.retry_after = reply_to, retry_after


class RateLimited(Refusal):
    """A rate limit (chatbot/limits.py) refused the turn: the message is stored and
    acked, not answered."""

    code = "rate_limited"

    def __init__(self, *, reply_to: str, message_id: int, retry_after: int, limit: str) -> None:
        super().__init__(
            gettext_noop(
                "You're sending messages too fast; this one is saved. Please try again shortly."
            ),
            reply_to=reply_to,
            message_id=message_id,
            retry_after=retry_after,
            limit=limit,
        )
        self.reply_to, self.message_id = reply_to, message_id
        self.retry_after, self.limit = retry_after, limit


class TooManyQueued(Refusal):
    """Too many messages of one connection wait for their turn (a flood): stored and
    acked, not answered."""

    code = "rate_limited"

    def __init__(self, *, reply_to: str, retry_after: int = 5) -> None:
        super().__init__(
            gettext_noop("Too many messages at once; this one is saved but won't be answered."),
            reply_to=reply_to,
            retry_after=retry_after,
        )
        self.reply_to, self.retry_after = reply_to, retry_after


# -- the bot check (docs/botcheck.md) --------------------------------------------------------


class BotRefusal(Refusal):
    """A bot-check verdict other than "allow": the message is not stored."""

    text = ""

    def __init__(self, *, reply_to: str) -> None:
        super().__init__(self.text, reply_to=reply_to)
        self.reply_to = reply_to


class BotChallenge(BotRefusal):
    code = "bot_challenge"
    text = gettext_noop("Please confirm you're here: press the button below to send your message.")


class BotRefused(BotRefusal):
    code = "bot_refused"
    text = gettext_noop(
        "This message looks automated, so it wasn't answered. If you're a person, "
        "please reload the page and try again."
    )


class BotCheckRequired(BotRefusal):
    """No fingerprint at all: not our widget. The connection is closed after the frame."""

    code = "bot_check_required"
    text = gettext_noop("This chat only works from the shop's chat widget.")
    close_code = 4403


# By ``botcheck.Verdict.action``.
BOT_REFUSALS: dict[str, type[BotRefusal]] = {
    "challenge": BotChallenge,
    "refuse": BotRefused,
    "refuse_connection": BotCheckRequired,
}


# -- identity and turns ----------------------------------------------------------------------


class IdentityConflict(Refusal):
    """The conversation is bound to another shopper; it is never moved."""

    code = "identity_conflict"

    def __init__(self) -> None:
        super().__init__(
            gettext_noop("This conversation belongs to another shopper; start a new one.")
        )


class TurnFailed(Refusal):
    """A turn ended without a reply (``turn.Failed``); the message stays stored."""

    def __init__(self, *, code: str, message: str, message_id: int) -> None:
        super().__init__(message, code=code, message_id=message_id)
        self.message_id = message_id


class InternalError(TurnFailed):
    """A turn crashed past its own error handling: the last line of defence."""

    def __init__(self, *, message_id: int) -> None:
        super().__init__(
            code="internal_error",
            message=gettext_noop("Something went wrong on our side; your message is saved."),
            message_id=message_id,
        )
