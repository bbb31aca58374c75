"""One WebSocket shopper for the tests: the widget's side of docs/protocol.md, over the
real ASGI application (consumer, services, turn) with channels' WebsocketCommunicator.

``connect`` opens a chat and returns the hello frame; ``send`` sends a message frame;
``frames_until_end`` collects the frames of one reply; ``shown`` is the text the widget
would show for them. ``Shopper`` wraps them for tests that play whole sessions.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from channels.testing import WebsocketCommunicator

ORIGIN = (b"origin", b"http://localhost")


async def connect(
    session: str | None = None,
    *,
    origin: tuple[bytes, bytes] = ORIGIN,
    wait_s: float = 20,
) -> tuple[WebsocketCommunicator, dict[str, Any]]:
    """A connected chat and its hello frame (asserted)."""
    from config.asgi import application

    path = "/ws/chat/" + (f"?session={session}" if session else "")
    comm = WebsocketCommunicator(application, path, headers=[origin])
    connected, _ = await comm.connect(timeout=wait_s)
    assert connected
    hello = await comm.receive_json_from(timeout=wait_s)
    assert hello["type"] == "hello", hello
    return comm, hello


async def send(comm: WebsocketCommunicator, text: str, cid: str) -> None:
    await comm.send_json_to({"type": "message", "id": cid, "text": text})


def _ends_reply(frame: dict[str, Any], *, turn_errors_only: bool) -> bool:
    if frame["type"] == "done":
        return True
    # A turn's own failure names the stored message; a refusal (a bad frame, a rate
    # limit before the turn) may come first and is not the end of the reply.
    return frame["type"] == "error" and (not turn_errors_only or bool(frame.get("message_id")))


async def frames_until_end(
    comm: WebsocketCommunicator, *, wait_s: float = 60, turn_errors_only: bool = False
) -> list[dict[str, Any]]:
    """Every frame up to and including the one that ends the reply (done or error)."""
    frames = []
    while True:
        frame = await comm.receive_json_from(timeout=wait_s)
        frames.append(frame)
        if _ends_reply(frame, turn_errors_only=turn_errors_only):
            return frames


def shown(frames: Sequence[dict[str, Any]]) -> str:
    """The reply text as the widget shows it: chunks appended, a replace starts over."""
    text = ""
    for frame in frames:
        if frame["type"] == "chunk":
            text += frame["text"]
        elif frame["type"] == "replace":
            text = frame["text"]
    return text


class Shopper:
    """One widget session: identify, ask, rate, close."""

    def __init__(self, comm: WebsocketCommunicator, hello: dict[str, Any]) -> None:
        self.comm = comm
        self.hello = hello
        self._n = 0

    @classmethod
    async def connect(cls, session: str | None = None, *, wait_s: float = 20) -> Shopper:
        comm, hello = await connect(session, wait_s=wait_s)
        return cls(comm, hello)

    async def identify(self, customer_id: str = "", *, token: str = "") -> None:
        from chatbot.orders.identity import shopper_token_issue

        token = token or shopper_token_issue(customer_id=customer_id)
        await self.comm.send_json_to({"type": "identify", "token": token})
        assert (await self.comm.receive_json_from(timeout=20))["type"] == "identified"

    async def ask(
        self, text: str, *, wait_s: float = 60, turn_errors_only: bool = False
    ) -> tuple[str, dict[str, Any]]:
        """Send a message; the reply text as shown and the frame that ended it."""
        self._n += 1
        await send(self.comm, text, f"m{self._n}")
        frames = await frames_until_end(self.comm, wait_s=wait_s, turn_errors_only=turn_errors_only)
        return shown(frames), frames[-1]

    async def rate(self, value: str | int, message_id: int | None = None) -> dict[str, Any]:
        frame: dict[str, Any] = {"type": "rate", "value": value}
        if message_id is not None:
            frame["message_id"] = message_id
        await self.comm.send_to(text_data=json.dumps(frame))
        return dict(await self.comm.receive_json_from(timeout=20))

    async def close(self) -> None:
        await self.comm.disconnect()
