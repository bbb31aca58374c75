"""The local GGUF backend on the real Gemma 3 270M model (no fakes)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from inference import registry
from inference.aio import astream
from inference.base import GenerationRequest, InferenceError
from inference.warmup import Readiness, warmup_run

pytestmark = pytest.mark.models

PROMPT = (
    "Customer-service replies.\n\nFacts: order #W1234567; status: shipped\n"
    "Reply: Your order #W1234567 has shipped.\n\nFacts: order #W7654321; status: pending\nReply:"
)


@pytest.fixture(scope="module")
def fast(model_files: None):
    backend = registry.get_backend("fast")
    backend.load()
    return backend


def test_streams_text_and_usage(fast) -> None:
    chunks = list(fast.stream(GenerationRequest(prompt=PROMPT, max_tokens=24, stop=("\n",))))
    text = "".join(c.text for c in chunks)
    assert len(chunks) > 2 and text.strip()
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens > 20
    assert fast.model_version == "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"


def test_closing_the_stream_cancels_generation(fast) -> None:
    # ignore_eos-free prompt that would run on for the whole budget if not cancelled.
    request = GenerationRequest(prompt="Count: 1, 2, 3,", max_tokens=400)
    gen = fast.stream(request)
    for i, _ in enumerate(gen):
        if i == 2:
            break
    gen.close()
    fast._last_worker.join(timeout=120)
    assert not fast._last_worker.is_alive()
    # Decoding stopped within a few tokens of the cancel, far short of 400.
    assert fast.last_request_chunks < 40


def test_concurrent_requests_are_safe(fast) -> None:
    results: dict[int, str] = {}
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            text = "".join(
                c.text
                for c in fast.stream(
                    GenerationRequest(
                        prompt=PROMPT.replace("7654321", f"765432{i}"),
                        max_tokens=16,
                        stop=("\n",),
                        seed=1,
                    )
                )
            )
            results[i] = text
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors and len(results) == 4 and all(r.strip() for r in results.values())


def test_count_tokens_uses_the_model_tokenizer(fast) -> None:
    short, longer = fast.count_tokens("hello"), fast.count_tokens("hello " * 50)
    assert 1 <= short <= 3 and 45 <= longer <= 60


async def test_astream_does_not_block_the_event_loop(fast) -> None:
    ticks = 0
    stop = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0.01)

    task = asyncio.create_task(ticker())
    parts = [c.text async for c in astream(fast, GenerationRequest(prompt=PROMPT, max_tokens=32))]
    stop.set()
    await task
    assert "".join(parts).strip()
    # Generation takes hundreds of ms; a blocked loop would tick ~once.
    assert ticks >= 5


def test_chat_request_to_a_base_model_is_refused(fast) -> None:
    from inference.base import ChatMessage

    with pytest.raises(InferenceError):
        list(fast.stream(GenerationRequest(messages=(ChatMessage("user", "hi"),))))


def test_warmup_reports_ready(fast, monkeypatch) -> None:
    fresh = Readiness()
    monkeypatch.setattr("inference.warmup.READINESS", fresh)
    state = warmup_run(roles=["fast"], requests=2)
    assert state.ready.is_set() and state.requests == 2 and state.roles == ["fast"]


def test_warmup_failure_is_reported_not_ready(monkeypatch, settings, tmp_path) -> None:
    fresh = Readiness()
    monkeypatch.setattr("inference.warmup.READINESS", fresh)
    settings.INFERENCE_BACKENDS = {
        "fast": {
            "BACKEND": "inference.backends.llamacpp.LlamaCppBackend",
            "CONFIG": {"model": "", "path": str(tmp_path / "missing.gguf"), "sha256": "ab"},
        }
    }
    state = warmup_run(roles=["fast"], requests=1)
    assert not state.ready.is_set() and "does not exist" in state.error
