"""Issue #18 item 6: every role can point at an OpenAI-compatible server, the base URL
is used as given, and ``Retry-After`` is read as seconds or as an HTTP date.

The real server is llama.cpp (``l3_url``, tests/servers.py). Two cases use the one fake
HTTP server (``http_fault_server``): a llama.cpp server neither answers 429 with a
``Retry-After`` date nor serves under an arbitrary base path such as Azure's, and the
test needs to see which path the client asked for."""

from __future__ import annotations

import email.utils
import subprocess
import sys
import time
from typing import Any

import pytest

from inference import registry
from inference.backends.openai import OpenAIBackend, UpstreamError, api_base_url
from inference.base import ChatMessage, GenerationRequest
from tests.config.test_env_file import ROOT, settings_with
from tests.servers import FaultServer, remote

HI = GenerationRequest(
    messages=(ChatMessage("user", "Say hello in one word."),), max_tokens=4, temperature=0
)


def test_base_url_rule() -> None:
    assert api_base_url("http://127.0.0.1:8080") == "http://127.0.0.1:8080/v1"
    assert api_base_url("http://127.0.0.1:8080/") == "http://127.0.0.1:8080/v1"
    assert api_base_url("https://api.openai.com/v1/") == "https://api.openai.com/v1"
    # A provider whose API path is not /v1 is used as it is, never with /v1 appended.
    assert api_base_url("https://host/api/paas/v4") == "https://host/api/paas/v4"


def test_a_base_path_is_kept_as_given(http_fault_server: FaultServer) -> None:
    backend = remote(f"{http_fault_server.url}/openai/deployments/chat")
    with pytest.raises(UpstreamError):
        list(backend.stream(HI))
    assert http_fault_server.paths == ["/openai/deployments/chat/chat/completions"]


def test_retry_after_as_an_http_date(http_fault_server: FaultServer) -> None:
    backend = remote(http_fault_server.url)
    http_fault_server.retry_after = email.utils.formatdate(time.time() + 30, usegmt=True)
    with pytest.raises(UpstreamError) as info:
        list(backend.stream(HI))
    assert info.value.code == "upstream_rate_limited"
    assert info.value.retry_after is not None and 27 <= info.value.retry_after <= 31
    # A date already past means "now"; garbage is ignored rather than guessed at.
    http_fault_server.retry_after = "Wed, 21 Oct 2015 07:28:00 GMT"
    with pytest.raises(UpstreamError) as info:
        list(backend.stream(HI))
    assert info.value.retry_after == 0.0
    http_fault_server.retry_after = "soon"
    with pytest.raises(UpstreamError) as info:
        list(backend.stream(HI))
    assert info.value.retry_after is None


def test_every_role_reads_its_server_from_the_environment() -> None:
    loaded = settings_with(
        "/dev/null",
        TIERDESK_FAST_BASE_URL="http://gpu-1:8080",
        TIERDESK_FAST_MODEL="gemma-3-270m",
        TIERDESK_FAST_API_KEY="k-fast",
        TIERDESK_FALLBACK_BASE_URL="https://llm.example.com/api/v2",
        TIERDESK_LARGE_BASE_URL="https://api.openai.com/v1",
        TIERDESK_LARGE_MODEL="gpt-4o",
    )
    backends = loaded["INFERENCE_BACKENDS"]
    for role in ("fast", "fallback", "large"):
        assert backends[role]["BACKEND"] == "inference.backends.openai.OpenAIBackend"
    fast = backends["fast"]["CONFIG"]
    assert (fast["api_base"], fast["model"], fast["api_key"]) == (
        "http://gpu-1:8080",
        "gemma-3-270m",
        "k-fast",
    )
    # Without its own _MODEL a role keeps its model id; the server may ignore it.
    assert backends["fallback"]["CONFIG"]["model"] == "qwen2.5-coder-0.5b-instruct-q4km"
    assert backends["large"]["CONFIG"]["model"] == "gpt-4o"
    # Remote roles are not warmed up: a warm-up would bill the API.
    assert loaded["TIERDESK_WARM_ROLES"] == []
    # The older L3 names still point the large role at a server.
    older = settings_with("/dev/null", TIERDESK_L3_API_BASE="http://l3:1234/v1")
    assert older["INFERENCE_BACKENDS"]["large"]["CONFIG"]["api_base"] == "http://l3:1234/v1"
    # The local roles default to the model server (manage.py modelserver) over HTTP,
    # one port per role; our own server is warmed (it bills nobody).
    fast = older["INFERENCE_BACKENDS"]["fast"]
    assert fast["BACKEND"].endswith("OpenAIBackend") and fast["CONFIG"]["model_server"]
    assert fast["CONFIG"]["api_base"] == "http://127.0.0.1:8090"
    assert older["INFERENCE_BACKENDS"]["fallback"]["CONFIG"]["api_base"] == "http://127.0.0.1:8091"
    assert older["TIERDESK_WARM_ROLES"] == ["fast", "fallback"]
    # In-process is still one setting away.
    inprocess = settings_with("/dev/null", TIERDESK_MODELS="inprocess")
    assert inprocess["INFERENCE_BACKENDS"]["fast"]["BACKEND"].endswith("LlamaCppBackend")
    assert inprocess["TIERDESK_WARM_ROLES"] == ["fast", "fallback"]


def test_unknown_order_backend_names_the_valid_ones() -> None:
    result = subprocess.run(
        [sys.executable, "-c", "import config.settings"],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "TIERDESK_ORDER_BACKEND": "shopify"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and "KeyError" not in result.stderr
    assert "TIERDESK_ORDER_BACKEND='shopify'" in result.stderr
    assert "use django or http" in result.stderr


@pytest.mark.models
@pytest.mark.usefixtures("isolated_state")
@pytest.mark.parametrize("suffix", ["", "/v1", "/v1/"])
def test_fast_role_streams_from_a_real_llama_cpp_server(
    l3_url: str, suffix: str, settings: Any
) -> None:
    """The fast role, configured only through the environment, answers from llama.cpp,
    whether the base URL is the bare host or already carries the API path."""
    loaded = settings_with("/dev/null", TIERDESK_FAST_BASE_URL=l3_url + suffix)
    settings.INFERENCE_BACKENDS = {"fast": loaded["INFERENCE_BACKENDS"]["fast"]}
    try:
        backend = registry.get_backend("fast")
        assert isinstance(backend, OpenAIBackend) and backend.api_base == f"{l3_url}/v1"
        chunks = list(backend.stream(HI))
        assert "".join(c.text for c in chunks).strip()
        assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens >= 1
    finally:
        registry.reset()
