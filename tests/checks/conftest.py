"""Fixtures for the checks' tests: traces recorded by running scripted agents."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider

from tests.checks import faults
from tracejudge.models import MultiAgentTrace
from tracejudge.testing import ScriptedLLMServer


@pytest.fixture(scope="module")
def checks_server() -> Iterator[ScriptedLLMServer]:
    """One ScriptedLLMServer for a module's runs; `faults.run` resets it for each."""
    with ScriptedLLMServer() as server:
        yield server


@pytest.fixture
def record(
    composo_tracing: TracerProvider, checks_server: ScriptedLLMServer
) -> Callable[[faults.Scenario], MultiAgentTrace]:
    """Run a scenario through the real openai client and tracer; returns its trace."""

    def run(scenario: faults.Scenario) -> MultiAgentTrace:
        return faults.run(scenario, checks_server)

    return run
