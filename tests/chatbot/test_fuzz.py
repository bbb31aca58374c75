"""Fuzzing the WebSocket protocol: hypothesis-generated frames,
random JSON, wrong types, huge strings, odd Unicode, binary frames and a flood.

Two levels:
- ``frame_parse`` alone, over thousands of cases: it returns a frame or raises
  ``ProtocolError`` with a stable code, nothing else;
- the real consumer (``config.asgi.application``): after every fuzzed frame a ``ping``
  must still get its ``pong``, no frame may carry ``internal_error``, and the
  connection must not close. The models are fakes (``fake_models``): a valid message
  frame starts a real turn, and what is under test is the protocol, not phrasing.

The counts of cases are printed (``-s`` shows them).
"""

from __future__ import annotations

import gc
import json
import tracemalloc
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatbot.protocol import ProtocolError, frame_parse
from config.asgi import application

ORIGIN = (b"origin", b"http://localhost")
CODES = {
    "binary_frame",
    "frame_too_large",
    "bad_json",
    "bad_field",
    "empty_message",
    "message_too_large",
    "unknown_type",
}
TYPES = ["message", "identify", "rate", "ping", "hello", "done", "", None, 7]

# Odd Unicode: every category, lone surrogates, RTL marks, zero-width joiners, NULs.
odd_text = st.text(
    alphabet=st.characters(codec=None, exclude_categories=()), min_size=0, max_size=300
) | st.sampled_from(["\u202e\u200d\ufeff", "\x00" * 5, "\ud800", "𝕿𝖎𝖊𝖗" * 40, " \n\t "])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | odd_text,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(odd_text, inner, max_size=5),
    max_leaves=20,
)
typed_frames = st.fixed_dictionaries(
    {"type": st.sampled_from(TYPES)},
    optional={
        "id": json_values,
        "text": json_values,
        "token": json_values,
        "message_id": json_values,
        "value": json_values,
        "ts": json_values,
    },
).map(json.dumps)
huge = st.sampled_from([20_000, 70_000]).map(
    lambda n: json.dumps({"type": "message", "id": "h", "text": "x" * n})
)
nested = st.integers(min_value=50, max_value=100_000).map(lambda n: "[" * n + "]" * n)
text_frames = typed_frames | json_values.map(json.dumps) | odd_text | huge | nested
binary_frames = st.binary(max_size=2048)


def _parse(text: str | None, data: bytes | None) -> None:
    try:
        frame_parse(text, data)
    except ProtocolError as exc:
        assert exc.code in CODES, exc.code
        frame = exc.frame()
        assert frame["type"] == "error" and frame["message"]


PARSED: list[int] = [0]


@pytest.fixture(scope="module", autouse=True)
def _report_counts() -> Any:
    yield
    print(f"\nframe_parse fuzz cases run: {PARSED[0]}")


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frame=text_frames | binary_frames)
def test_frame_parse_returns_a_frame_or_a_stable_error(frame: str | bytes) -> None:
    PARSED[0] += 1
    if isinstance(frame, bytes):
        _parse(None, frame)
    else:
        _parse(frame, None)


async def _pong(comm: WebsocketCommunicator, ts: int) -> list[dict[str, Any]]:
    """Frames until our pong arrives; a close or a timeout fails the test."""
    await comm.send_json_to({"type": "ping", "ts": ts})
    frames = []
    while True:
        output = await comm.receive_output(timeout=30)
        assert output["type"] == "websocket.send", f"connection closed: {output}"
        frame = json.loads(output["text"])
        frames.append(frame)
        if frame["type"] == "pong" and frame.get("ts") == ts:
            return frames


SENT: list[int] = [0]


@pytest.mark.django_db(transaction=True)
def test_the_consumer_survives_fuzzed_frames(seeded_shop: None, fake_models: Any) -> None:
    fake_models["fast"].replies = ["OK."] * 1000
    fake_models["fallback"].replies = ["OK."] * 1000

    async def scenario(frames: list[str | bytes]) -> None:
        comm = WebsocketCommunicator(application, "/ws/chat/", headers=[ORIGIN])
        connected, _ = await comm.connect(timeout=10)
        assert connected
        assert (await comm.receive_json_from(timeout=10))["type"] == "hello"
        for i, frame in enumerate(frames):
            # send_input, not send_to: an empty frame is a case too.
            key = "bytes" if isinstance(frame, bytes) else "text"
            await comm.send_input({"type": "websocket.receive", key: frame})
            SENT[0] += 1
            seen = await _pong(comm, ts=i + 1)
            errors = [f for f in seen if f["type"] == "error"]
            assert not [f for f in errors if f.get("code") == "internal_error"], seen
        await comm.disconnect()

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(frames=st.lists(text_frames | binary_frames, min_size=1, max_size=8))
    def run(frames: list[str | bytes]) -> None:
        async_to_sync(scenario)(frames)

    run()
    print(f"\nconsumer fuzz: {SENT[0]} frames over 60 connections, each followed by a ping")
    assert SENT[0] >= 60


@pytest.mark.django_db(transaction=True)
def test_a_flood_of_bad_frames_keeps_the_connection_and_memory_bounded(
    seeded_shop: None,
) -> None:
    """2,000 junk frames as fast as they can be sent: every one gets its error frame,
    the connection stays usable, and memory allocated by the second 1,000 stays under
    1 MB (growth per frame would show up as ~1 KB per frame or more)."""

    async def flood() -> tuple[int, int]:
        comm = WebsocketCommunicator(application, "/ws/chat/", headers=[ORIGIN])
        connected, _ = await comm.connect(timeout=10)
        assert connected
        await comm.receive_json_from(timeout=10)

        async def burst(n: int) -> None:
            for i in range(n):
                await comm.send_to(text_data="{" if i % 2 else '{"type": "nope"}')
            for _ in range(n):
                frame = await comm.receive_json_from(timeout=30)
                assert frame["type"] == "error" and frame["code"] in CODES

        await burst(1000)  # warm: caches, lazily built structures
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        await burst(1000)
        gc.collect()
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
        grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
        await _pong(comm, ts=99)
        await comm.disconnect()
        return grown, 2000

    grown, count = async_to_sync(flood)()
    print(f"\nflood: {count} frames, memory growth over the second 1,000: {grown} bytes")
    assert grown < 1_000_000
