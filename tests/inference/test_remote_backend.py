"""The OpenAI-compatible backend against a real server: xllamacpp's HTTP listener
serving the local Qwen2.5-Coder-0.5B model. No mocked HTTP."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest

from inference.backends.openai import OpenAIBackend, UpstreamError
from inference.base import ChatMessage, GenerationRequest
from tests.net import free_port
from tests.servers import FaultServer, remote

pytestmark = [pytest.mark.models, pytest.mark.usefixtures("isolated_state")]

QUESTION = GenerationRequest(
    messages=(
        ChatMessage("system", "You are a helpful shop assistant. Answer in one sentence."),
        ChatMessage("user", "Is cotton or wool warmer for winter socks?"),
    ),
    max_tokens=16,
    temperature=0.0,
    seed=1,
)


async def test_streams_sse_chunks_and_reads_usage(remote_large: OpenAIBackend) -> None:
    chunks = [c async for c in remote_large.astream(QUESTION)]
    text = "".join(c.text for c in chunks)
    assert len([c for c in chunks if c.text]) >= 3 and text.strip()
    usage = chunks[-1].usage
    assert usage is not None and usage.prompt_tokens > 20 and 0 < usage.completion_tokens <= 16


def test_blocking_stream_matches_the_async_one(remote_large: OpenAIBackend) -> None:
    text = "".join(c.text for c in remote_large.stream(QUESTION))

    async def run() -> str:
        return "".join([c.text async for c in remote_large.astream(QUESTION)])

    assert text == asyncio.run(run())  # temperature 0, same seed: same answer


async def test_completion_prompts_use_the_completions_endpoint(
    remote_large: OpenAIBackend,
) -> None:
    request = GenerationRequest(prompt="The capital of France is", max_tokens=4, temperature=0)
    chunks = [c async for c in remote_large.astream(request)]
    assert "Paris" in "".join(c.text for c in chunks)


async def test_leaving_early_closes_the_connection_and_the_server_stops(
    remote_large: OpenAIBackend,
) -> None:
    long = GenerationRequest(
        messages=(ChatMessage("user", "Count from 1 to 500, comma separated."),),
        max_tokens=500,
        temperature=0,
    )
    gen = remote_large.astream(long)
    async for _ in gen:
        break
    await gen.aclose()
    started = time.perf_counter()
    # The server has free slots again at once: the abandoned request is not decoding.
    text = "".join([c.text async for c in remote_large.astream(QUESTION)])
    # (Decoding the abandoned 500 tokens would take minutes on this shared machine.)
    assert text and time.perf_counter() - started < 60


async def test_refused_connection_is_upstream_unreachable() -> None:
    backend = remote(f"http://127.0.0.1:{free_port()}")
    with pytest.raises(UpstreamError) as info:
        [c async for c in backend.astream(QUESTION)]
    assert info.value.code == "upstream_unreachable" and info.value.counts_for_breaker


async def test_read_timeout_is_explicit(model_server: Any) -> None:
    backend = remote(model_server.url, read_timeout_s=0.3)
    model_server.pause()  # the process is stopped: the kernel accepts, nobody answers
    started = time.perf_counter()
    with pytest.raises(UpstreamError) as info:
        [c async for c in backend.astream(QUESTION)]
    assert info.value.code == "upstream_timeout"
    assert time.perf_counter() - started < 2


async def test_http_errors_map_to_stable_codes(http_fault_server: FaultServer) -> None:
    backend = remote(http_fault_server.url)
    for status, code, breaker in (
        (429, "upstream_rate_limited", True),
        (503, "upstream_error", True),
        (401, "upstream_auth", False),
        (400, "upstream_bad_request", False),
    ):
        http_fault_server.status = status
        with pytest.raises(UpstreamError) as info:
            [c async for c in backend.astream(QUESTION)]
        assert (info.value.code, info.value.status) == (code, status)
        assert info.value.counts_for_breaker is breaker
    http_fault_server.status = 429
    with pytest.raises(UpstreamError) as info:
        list(backend.stream(QUESTION))
    assert info.value.retry_after == 7.0


async def test_bad_request_from_the_real_server(l3_url: str) -> None:
    backend = remote(l3_url)
    bad = GenerationRequest(messages=(ChatMessage("user", "hi"),), max_tokens=-5)
    with pytest.raises(UpstreamError) as info:
        [c async for c in backend.astream(bad)]
    assert info.value.code in {"upstream_bad_request", "upstream_error"}


def test_api_key_is_sent_as_bearer(l3_url: str) -> None:
    backend = remote(l3_url, api_key="sk-test")
    assert backend._headers()["Authorization"] == "Bearer sk-test"
    assert backend.api_base.endswith("/v1")
    # The documented estimate: ~4 characters per token, one per CJK character.
    assert backend.count_tokens("a" * 40) == 10 and backend.count_tokens("你好吗") == 3


def test_direct_call_sanity(l3_url: str) -> None:
    """The listener really is an OpenAI-compatible endpoint (what the client relies on)."""
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    response = httpx.post(f"{l3_url}/v1/chat/completions", json=body, timeout=30)
    assert response.status_code == 200 and response.json()["usage"]["completion_tokens"] >= 1
