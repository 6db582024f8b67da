"""Fixtures of the report tests: traces with planted faults, made by running real code."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider

from tests.batch.conftest import demo_trace  # noqa: F401  (the demo program's trace)
from tests.checks import faults
from tracejudge.models import MultiAgentTrace
from tracejudge.testing import ScriptedLLMServer


@pytest.fixture(scope="module")
def scripted() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer() as server:
        yield server


@pytest.fixture
def bad_arguments_trace(
    composo_tracing: TracerProvider, scripted: ScriptedLLMServer
) -> MultiAgentTrace:
    """The researcher calls get_weather with arguments its schema rejects (the real openai
    client against a scripted server, recorded by the process's tracing)."""
    return faults.run(faults.bad_arguments(0), scripted)
