"""A fake model backend for tests (after simonw/llm's test plugin).

It replays queued replies and records every request. Use it only where a real model
can't produce the situation under test (a crash, a hang, a specific wrong number);
tests that check phrasing use the real Gemma model.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from inference.base import GenerationChunk, GenerationRequest, InferenceError, Usage


@dataclass
class FakeBackend:
    role: str = "fast"
    model_id: str = "fake-model"
    model_version: str = "fake-1"
    can_stream: bool = True
    chat: bool = True
    replies: list[str | Exception] = field(default_factory=list)
    calls: list[GenerationRequest] = field(default_factory=list)
    delay_s: float = 0.0
    first_delay_s: float = 0.0

    def load(self) -> None:
        return None

    def close(self) -> None:
        return None

    def count_tokens(self, text: str) -> int:
        return max(1, len(text) // 4)

    def stream(self, request: GenerationRequest) -> Iterator[GenerationChunk]:
        self.calls.append(request)
        reply = self.replies.pop(0) if self.replies else "OK."
        if self.first_delay_s:
            time.sleep(self.first_delay_s)
        if isinstance(reply, Exception):
            raise InferenceError("model_error", str(reply))
        words = reply.split(" ")
        for i, word in enumerate(words):
            if self.delay_s:
                time.sleep(self.delay_s)
            yield GenerationChunk(text=(" " if i else "") + word)
        yield GenerationChunk(text="", finish_reason="end", usage=Usage(10, len(words)))
