"""OpenLLMetry's chat request hook runs without an event loop per call, records the same
request, and leaves a user's image uploader to OpenLLMetry's own runner."""

from __future__ import annotations

import asyncio
import json
import logging
import types
from typing import Any

import openai
import pytest
from opentelemetry.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.instrumentation.openai.shared import chat_wrappers
from opentelemetry.instrumentation.openai.shared.config import Config
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tracejudge.testing import Reply, ScriptedLLMServer
from tracejudge.tracing import _openllmetry_hook

MODEL = "gpt-4.1-mini"
# A 1x1 PNG, as a data URL: OpenLLMetry hands such images to the uploader.
IMAGE = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "YPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


@pytest.fixture(autouse=True)
def answers(llm_server: ScriptedLLMServer) -> None:
    llm_server.default = Reply.text("ok")


@pytest.fixture
def event_loops_started(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts `asyncio.run` calls (OpenLLMetry's own runner makes one per request)."""
    started: list[int] = []
    real_run = asyncio.run

    def counting_run(main: Any, **kwargs: Any) -> Any:
        started.append(1)
        return real_run(main, **kwargs)

    monkeypatch.setattr(asyncio, "run", counting_run)
    return started


def _input_messages(exporter: InMemorySpanExporter) -> list[dict[str, Any]]:
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "openai.chat"]
    return json.loads(str(span.attributes["gen_ai.input.messages"]))


def test_tracing_runs_the_request_hook_loop_free() -> None:
    assert getattr(chat_wrappers.run_async, "_tracejudge_loop_free", False)
    assert not _openllmetry_hook.install()  # installed once: a second install wraps nothing


def test_a_sync_call_is_recorded_without_an_event_loop(
    client: openai.OpenAI, exported_spans: InMemorySpanExporter, event_loops_started: list[int]
) -> None:
    client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert _input_messages(exported_spans)[0]["parts"][0]["content"] == "hi"
    assert event_loops_started == []


async def test_a_sync_call_inside_a_running_loop_is_recorded_without_a_thread(
    client: openai.OpenAI, exported_spans: InMemorySpanExporter, event_loops_started: list[int]
) -> None:
    # OpenLLMetry's own runner starts a thread running a new loop here, on every call.
    client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hey"}])
    assert _input_messages(exported_spans)[0]["parts"][0]["content"] == "hey"
    assert event_loops_started == []


def test_a_users_image_uploader_still_runs_on_a_loop(
    client: openai.OpenAI,
    exported_spans: InMemorySpanExporter,
    event_loops_started: list[int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def upload(trace_id: str, span_id: str, name: str, data: str) -> str:
        await asyncio.sleep(0.001)  # real waiting: needs a running loop
        return f"https://images.example/{name}"

    monkeypatch.setattr(Config, "upload_base64_image", upload)
    content = [{"type": "image_url", "image_url": {"url": IMAGE}}]
    client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": content}])
    assert "https://images.example/message_0_content_0.png" in json.dumps(
        _input_messages(exported_spans)
    )
    assert event_loops_started == [1]  # OpenLLMetry's runner, as without tracejudge


def test_a_hook_that_suspends_hands_every_later_request_to_openllmetrys_runner(
    caplog: pytest.LogCaptureFixture,
) -> None:
    handed: list[Any] = []
    default = OpenAIInstrumentor.__init__.__defaults__  # any object: identity is what counts
    config = types.SimpleNamespace(upload_base64_image=default)
    runner = _openllmetry_hook._loop_free_runner(handed.append, config, default)
    finished: list[str] = []

    async def quick() -> None:
        finished.append("quick")

    async def suspending() -> None:
        await asyncio.sleep(0)
        finished.append("never here")

    runner(quick())
    assert finished == ["quick"] and handed == []
    with caplog.at_level(logging.WARNING, logger="tracejudge.tracing"):
        runner(suspending())
    assert "waited on an event loop" in caplog.text
    later = quick()
    runner(later)
    assert handed == [later]
    later.close()
