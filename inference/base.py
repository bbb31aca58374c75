"""The one small model interface every backend implements (after simonw/llm).

A backend is synchronous and blocking: ``stream`` yields chunks as the engine
produces them. Callers on the event loop never call it directly; they use
``inference.aio.astream``, which runs it in a worker thread.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class ChatMessage:
    role: str  # "system" | "user" | "assistant"
    content: str


@dataclass(frozen=True)
class GenerationRequest:
    """A completion (``prompt``) or chat (``messages``) request; exactly one is set."""

    prompt: str | None = None
    messages: tuple[ChatMessage, ...] | None = None
    max_tokens: int = 64
    temperature: float = 0.2
    stop: tuple[str, ...] = ()
    # Keep the shared prefix in llama.cpp's prompt cache between calls.
    cache_prompt: bool = True
    seed: int | None = None

    def __post_init__(self) -> None:
        if (self.prompt is None) == (self.messages is None):
            raise ValueError("set exactly one of prompt or messages")

    def sampling_key(self) -> dict[str, Any]:
        return {
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "stop": list(self.stop),
            "seed": self.seed,
        }


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class GenerationChunk:
    """One piece of streamed text. The last chunk of a stream carries ``usage``."""

    text: str
    finish_reason: str | None = None
    usage: Usage | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class InferenceError(RuntimeError):
    """A backend failed; ``code`` is stable and safe to show in an error frame."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class ModelFileError(RuntimeError):
    """A model file is missing or fails its checksum: start-up must stop."""


@runtime_checkable
class ModelBackend(Protocol):
    role: str
    model_id: str
    # Changes whenever the weights change (the file's sha256 for local models); part
    # of every response-cache key, so a new model version invalidates the cache.
    model_version: str
    can_stream: bool

    def load(self) -> None: ...

    def stream(self, request: GenerationRequest) -> Iterator[GenerationChunk]: ...

    def count_tokens(self, text: str) -> int: ...

    def close(self) -> None: ...
