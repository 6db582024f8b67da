"""Fixtures for the tracing tests: real openai clients over HTTP to a ScriptedLLMServer."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import openai
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tracejudge.testing import ScriptedLLMServer
from tracejudge.tracing import ComposoTracer, Instruments, IsolatingSpanProcessor


@pytest.fixture(autouse=True)
def tracing(composo_tracing: TracerProvider) -> TracerProvider:
    """Every tracing test runs with tracing initialised (again, if a test reset it)."""
    if ComposoTracer.capture_processor() is None:
        ComposoTracer.init(instruments=Instruments.OPENAI)
    return composo_tracing


@pytest.fixture
def isolated_tracing() -> Iterator[None]:
    """For tests that initialise tracing their own way: starts un-initialised, and puts the
    session's setup back afterwards."""
    ComposoTracer.reset()
    yield
    ComposoTracer.reset()
    ComposoTracer.init(instruments=Instruments.OPENAI)


@pytest.fixture
def client(llm_server: ScriptedLLMServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=llm_server.base_url, api_key="test", max_retries=0) as oai:
        yield oai


@pytest.fixture
async def aclient(llm_server: ScriptedLLMServer) -> AsyncIterator[openai.AsyncOpenAI]:
    oai = openai.AsyncOpenAI(base_url=llm_server.base_url, api_key="test", max_retries=0)
    yield oai
    await oai.close()


@pytest.fixture
def exported_spans(tracing: TracerProvider) -> Iterator[InMemorySpanExporter]:
    """Every span the provider ends during the test, as a user's own exporter sees them."""
    exporter = InMemorySpanExporter()
    processor = IsolatingSpanProcessor(SimpleSpanProcessor(exporter))
    tracing.add_span_processor(processor)
    yield exporter
    processor.detach()
