"""Parse and validate client frames (docs/protocol.md). Pure functions, no I/O."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils.translation import gettext_noop

from .botcheck import Evidence, EvidenceError, evidence_parse
from .refusals import Refusal, refusal_frame


class ProtocolError(Refusal, ValueError):
    """A frame the server refuses; the connection stays open."""

    def __init__(
        self, code: str, message: str, *, params: dict[str, Any] | None = None, **extra: Any
    ) -> None:
        # ``message`` is a msgid with %(name)s ``params``: translated when rendered.
        super().__init__(message, code=code, params=params, **extra)

    @property
    def extra(self) -> dict[str, Any]:
        return self.fields

    def frame(self) -> dict[str, Any]:
        return refusal_frame(self)


@dataclass(frozen=True)
class MessageFrame:
    client_id: str
    text: str
    # The widget's bot-check fingerprint (docs/botcheck.md); None when absent.
    bot: Evidence | None = None


@dataclass(frozen=True)
class IdentifyFrame:
    token: str


@dataclass(frozen=True)
class PingFrame:
    ts: Any


@dataclass(frozen=True)
class RateFrame:
    """Thumbs on one reply (``message_id`` + "up"/"down"), or 1-5 for the conversation
    (no ``message_id``)."""

    message_id: int | None
    value: str | int


@dataclass(frozen=True)
class TypingFrame:
    """The shopper is typing (relayed to the person holding the conversation)."""


Frame = MessageFrame | IdentifyFrame | PingFrame | RateFrame | TypingFrame


def _field(data: dict[str, Any], name: str, kind: type, *, max_len: int | None = None) -> Any:
    value = data.get(name)
    if not isinstance(value, kind) or isinstance(value, bool) != (kind is bool):
        raise ProtocolError(
            "bad_field",
            gettext_noop("field '%(name)s' must be a %(kind)s"),
            params={"name": name, "kind": kind.__name__},
        )
    if max_len is not None and isinstance(value, str) and len(value) > max_len:
        raise ProtocolError(
            "bad_field",
            gettext_noop("field '%(name)s' is longer than %(max)s characters"),
            params={"name": name, "max": max_len},
        )
    return value


def frame_parse(text_data: str | None, bytes_data: bytes | None) -> Frame:
    if bytes_data is not None and text_data is None:
        raise ProtocolError(
            "binary_frame", gettext_noop("binary frames are not accepted; send JSON text")
        )
    raw = text_data or ""
    # Measure before parsing so a huge frame costs no JSON work.
    if len(raw) > settings.TIERDESK_MAX_FRAME_BYTES or (
        len(raw.encode("utf-8", "surrogatepass")) > settings.TIERDESK_MAX_FRAME_BYTES
    ):
        raise ProtocolError(
            "frame_too_large",
            gettext_noop("frame is larger than %(max)s bytes"),
            params={"max": settings.TIERDESK_MAX_FRAME_BYTES},
        )
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        raise ProtocolError("bad_json", gettext_noop("frame is not valid JSON")) from None
    if not isinstance(data, dict):
        raise ProtocolError("bad_json", gettext_noop("frame must be a JSON object"))
    kind = data.get("type")
    if kind == "message":
        client_id = _field(data, "id", str, max_len=64).strip()
        if not client_id:
            raise ProtocolError("bad_field", gettext_noop("field 'id' must not be empty"))
        raw_text = _field(data, "text", str)
        text = raw_text.replace("\x00", "").strip()
        if not text:
            raise ProtocolError(
                "empty_message", gettext_noop("message is empty"), reply_to=client_id
            )
        if len(text) > settings.TIERDESK_MAX_MESSAGE_CHARS:
            raise ProtocolError(
                "message_too_large",
                gettext_noop("message is longer than %(max)s characters"),
                params={"max": settings.TIERDESK_MAX_MESSAGE_CHARS},
                reply_to=client_id,
            )
        bot = None
        if data.get("bot") is not None:
            try:
                # The fingerprint signs the text as sent, before trimming.
                bot = evidence_parse(data["bot"], signed_text=raw_text)
            except EvidenceError as exc:
                raise ProtocolError("bad_field", str(exc), reply_to=client_id) from None
        return MessageFrame(client_id=client_id, text=text, bot=bot)
    if kind == "identify":
        return IdentifyFrame(token=_field(data, "token", str, max_len=4096))
    if kind == "rate":
        return _rate_parse(data)
    if kind == "typing":
        return TypingFrame()
    if kind == "ping":
        ts = data.get("ts")
        return PingFrame(ts=ts if isinstance(ts, int | float | str) else None)
    raise ProtocolError(
        "unknown_type",
        gettext_noop("unknown frame type %(type)s"),
        params={"type": repr(str(kind)[:40])},
    )


def _rate_parse(data: dict[str, Any]) -> RateFrame:
    message_id = data.get("message_id")
    value = data.get("value")
    if message_id is not None:
        if isinstance(message_id, bool) or not isinstance(message_id, int) or message_id < 1:
            raise ProtocolError(
                "bad_field", gettext_noop("field 'message_id' must be a positive integer")
            )
        if value not in ("up", "down"):
            raise ProtocolError("bad_field", gettext_noop("a reply is rated 'up' or 'down'"))
        return RateFrame(message_id=message_id, value=str(value))
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 5:
        raise ProtocolError("bad_field", gettext_noop("a conversation is rated 1 to 5"))
    return RateFrame(message_id=None, value=value)
