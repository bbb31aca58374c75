from __future__ import annotations

import json

import pytest
from django.test import override_settings

from chatbot.protocol import IdentifyFrame, MessageFrame, PingFrame, ProtocolError, frame_parse


def parse(obj: object) -> object:
    return frame_parse(json.dumps(obj), None)


def code_of(text: str | None, data: bytes | None = None) -> str:
    with pytest.raises(ProtocolError) as info:
        frame_parse(text, data)
    return info.value.code


def test_message_frame_is_parsed_and_trimmed() -> None:
    frame = parse({"type": "message", "id": "c1", "text": "  where is my order?  "})
    assert frame == MessageFrame(client_id="c1", text="where is my order?")


def test_identify_and_ping() -> None:
    assert parse({"type": "identify", "token": "abc"}) == IdentifyFrame(token="abc")
    assert parse({"type": "ping", "ts": 5}) == PingFrame(ts=5)
    assert parse({"type": "ping", "ts": {"x": 1}}) == PingFrame(ts=None)


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("{not json", "bad_json"),
        ("[1, 2]", "bad_json"),
        ('"hello"', "bad_json"),
        ("{}", "unknown_type"),
        ('{"type": "launch_missiles"}', "unknown_type"),
        ('{"type": "message", "text": "hi"}', "bad_field"),
        ('{"type": "message", "id": 5, "text": "hi"}', "bad_field"),
        ('{"type": "message", "id": "a", "text": 5}', "bad_field"),
        ('{"type": "message", "id": "a", "text": true}', "bad_field"),
        ('{"type": "message", "id": "", "text": "hi"}', "bad_field"),
        ('{"type": "message", "id": "a", "text": "   "}', "empty_message"),
        ('{"type": "message", "id": "a", "text": "\\u0000"}', "empty_message"),
        ('{"type": "identify"}', "bad_field"),
    ],
)
def test_bad_frames_get_stable_codes(raw: str, code: str) -> None:
    assert code_of(raw) == code


def test_binary_frame_refused() -> None:
    assert code_of(None, b"\x00\x01") == "binary_frame"


def test_client_id_too_long() -> None:
    assert code_of(json.dumps({"type": "message", "id": "x" * 65, "text": "hi"})) == "bad_field"


@override_settings(TIERDESK_MAX_MESSAGE_CHARS=10, TIERDESK_MAX_FRAME_BYTES=1000)
def test_size_limits_are_settings() -> None:
    assert (
        code_of(json.dumps({"type": "message", "id": "a", "text": "x" * 11})) == "message_too_large"
    )
    assert isinstance(parse({"type": "message", "id": "a", "text": "x" * 10}), MessageFrame)
    assert (
        code_of(json.dumps({"type": "message", "id": "a", "text": "x" * 2000})) == "frame_too_large"
    )
    # Multi-byte text counts in bytes, not characters.
    assert code_of(
        json.dumps({"type": "message", "id": "a", "text": "订" * 400}, ensure_ascii=False)
    ) == ("frame_too_large")


def test_deeply_nested_json_is_bad_json_not_a_crash() -> None:
    assert code_of("[" * 5000 + "]" * 5000) in {"bad_json", "frame_too_large"}
    with override_settings(TIERDESK_MAX_FRAME_BYTES=100_000):
        assert code_of("[" * 50000 + "]" * 50000) == "bad_json"
