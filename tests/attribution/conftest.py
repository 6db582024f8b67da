"""Fixtures for attribution's tests: traces recorded by running scripted agents, clean
framework recordings, and judges on a scripted judge server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider

from tests.checks import faults
from tracejudge import checks
from tracejudge.convert import traces_from_otlp
from tracejudge.judges import OpenAICompatibleJudge
from tracejudge.models import MultiAgentTrace
from tracejudge.testing import ScriptedLLMServer

FRAMEWORKS = Path(__file__).resolve().parents[1] / "fixtures" / "frameworks"


def recording(name: str) -> MultiAgentTrace:
    """A framework recording converted from its OTLP protobuf (with its log records)."""
    logs = FRAMEWORKS / f"{name}.logs.pb"
    traces = traces_from_otlp(FRAMEWORKS / f"{name}.pb", logs=logs if logs.exists() else None)
    (trace,) = [t for t in traces if t.has_llm_interactions]
    return trace


def is_clean(trace: MultiAgentTrace) -> bool:
    """No built-in check finds anything: a trace to plant one fault in."""
    return not any(
        result is not None and result.score is not None and result.score < 1.0
        for check in checks.ALL
        for result in check.evaluate(trace).values()
    )


RECORDINGS = sorted(p.name[: -len(".meta.json")] for p in FRAMEWORKS.glob("*.meta.json"))


@pytest.fixture(scope="module")
def checks_server() -> Iterator[ScriptedLLMServer]:
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


@pytest.fixture
def judge_server() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer() as server:
        yield server


@pytest.fixture
async def judge(judge_server: ScriptedLLMServer) -> AsyncIterator[OpenAICompatibleJudge]:
    made = OpenAICompatibleJudge(
        "judge-model", base_url=judge_server.base_url, api_key="test", cache=False
    )
    yield made
    await made.aclose()
