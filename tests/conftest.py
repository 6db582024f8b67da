"""Fixtures shared by every test stage.

Tracing: OpenLLMetry can be instrumented only once per process (its uninstrument() leaves
chat completions wrapped, so a second instrument() records every call twice), so
`composo_tracing` calls `ComposoTracer.init(instruments=Instruments.OPENAI)` once per pytest
process. Tests that need raw spans should take them from an `AgentTracer` (``tracer.spans``)
or add a processor of their own for the test's duration, never instrument again.

Speed (tests/speed.py, tests/README.md): a test's call over 3 s fails unless marked
`@pytest.mark.heavy("why")`; Hypothesis's example counts come from a profile
(TRACEJUDGE_HYPOTHESIS_PROFILE); `xdist_group` marks keep tests off each other's worker.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from tracejudge.testing import ScriptedLLMServer
from tracejudge.tracing import ComposoTracer, Instruments

pytest_plugins = ["tests.speed", "tests.bytecode"]


@pytest.fixture(scope="session")
def composo_tracing() -> TracerProvider:
    """The process's TracerProvider, with tracejudge's capture and OpenAI instrumented.

    Like an application that configured OpenTelemetry itself, the session sets an SDK
    TracerProvider globally first (unless something already did); `ComposoTracer.init`
    must then reuse it rather than install its own.
    """
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        trace.set_tracer_provider(TracerProvider())
    return ComposoTracer.init(instruments=Instruments.OPENAI)


@pytest.fixture
def llm_server() -> Iterator[ScriptedLLMServer]:
    """A fresh ScriptedLLMServer on loopback; script it with ``llm_server.add(...)``."""
    with ScriptedLLMServer() as server:
        yield server
