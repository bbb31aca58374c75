"""The OpenAI-compatible wire format, written once for every backend that speaks it.

``OpenAIBackend`` sends it over HTTP to a remote API; ``LlamaCppBackend`` hands the
same body to xllamacpp's ``handle_chat_completions`` / ``handle_completions``, which
take OpenAI-style requests and call back with OpenAI-style stream chunks.
"""

from __future__ import annotations

from typing import Any

from ..base import GenerationRequest, Usage


def request_body(request: GenerationRequest, *, usage_on_prompts: bool = True) -> dict[str, Any]:
    """The streaming request body for ``request``: ``messages`` (chat) or ``prompt``.

    Usage is asked for with ``stream_options.include_usage``; ``usage_on_prompts``
    False leaves it off completion (``prompt``) requests, for llama.cpp, which
    reports their usage in the final chunk anyway. Backend-specific fields
    (``model``, ``cache_prompt``) are the caller's to add.
    """
    body: dict[str, Any] = {
        "stream": True,
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
    }
    if request.stop:
        body["stop"] = list(request.stop)
    if request.seed is not None:
        body["seed"] = request.seed
    if request.messages is not None:
        body["messages"] = [{"role": m.role, "content": m.content} for m in request.messages]
    else:
        body["prompt"] = request.prompt
    if request.messages is not None or usage_on_prompts:
        body["stream_options"] = {"include_usage": True}
    return body


def read_chunk(event: dict[str, Any], chat: bool) -> tuple[str, str | None, Usage | None]:
    """One streamed chunk to ``(text, finish_reason, usage)``; usage only where sent."""
    usage = None
    if event.get("usage"):
        u = event["usage"]
        usage = Usage(int(u.get("prompt_tokens") or 0), int(u.get("completion_tokens") or 0))
    choices = event.get("choices") or []
    if not choices:
        return "", None, usage
    choice = choices[0]
    if chat:
        text = str((choice.get("delta") or {}).get("content") or "")
    else:
        text = str(choice.get("text") or "")
    return text, choice.get("finish_reason"), usage
