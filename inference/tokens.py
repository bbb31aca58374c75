"""Token pre-count before the large tier (docs/product.md: count, and degrade over the threshold).

The count uses the target model's own tokenizer where there is one (llama.cpp's
``/tokenize`` for a local GGUF model) and the remote backend's documented estimate
otherwise (``OpenAIBackend.count_tokens``). A chat request is counted as the sum of
its messages plus a per-message allowance for the chat template's role markers.
"""

from __future__ import annotations

from .base import GenerationRequest, ModelBackend

# ChatML and the OpenAI format spend about 4 tokens per message on role markers.
PER_MESSAGE_TOKENS = 4


def request_count_tokens(backend: ModelBackend, request: GenerationRequest) -> int:
    """Blocking (a local count calls llama.cpp): run it off the event loop."""
    if request.messages is None:
        return backend.count_tokens(request.prompt or "")
    text = "\n".join(m.content for m in request.messages)
    return backend.count_tokens(text) + PER_MESSAGE_TOKENS * len(request.messages)
