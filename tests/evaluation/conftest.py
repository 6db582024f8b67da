"""Fixtures for the evaluation tests: a scripted judge model over real HTTP, and clients."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tracejudge import Composo
from tracejudge.judges import OpenAICompatibleJudge
from tracejudge.testing import RecordedRequest, Reply, ScriptedLLMServer

_ENVIRONMENT = (
    "COMPOSO_API_KEY",
    "TRACEJUDGE_JUDGE",
    "TRACEJUDGE_JUDGE_MODEL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
)


@pytest.fixture(autouse=True)
def _no_ambient_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's own keys must not choose the judge in these tests."""
    for name in _ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)


def verdict(score: int = 8, explanation: str = "Looks right.", **extra: Any) -> Reply:
    """A judge reply for a Reward/Penalize criterion."""
    return Reply.text(
        json.dumps({"explanation": explanation, "applicable": True, "score": score, **extra})
    )


def binary(passed: bool, explanation: str = "Checked.") -> Reply:
    """A judge reply for a Passes if/Fails if criterion."""
    return Reply.text(
        json.dumps({"explanation": explanation, "applicable": True, "passed": passed})
    )


def judged_content(request: RecordedRequest) -> str:
    """The rendered transcript the judge was given (the user message of the judge prompt)."""
    return request.json["messages"][-1]["content"]


def judge_question(request: RecordedRequest) -> str:
    """What the judge prompt asks after the data: the target, the criterion, the reply."""
    return judged_content(request).rsplit("TRACE_DATA>>>", 1)[-1]


def criterion_of(request: RecordedRequest) -> str:
    for line in judge_question(request).splitlines():
        if line.startswith("Criterion: "):
            return line[len("Criterion: ") :]
    raise AssertionError("no criterion in the judge prompt")


@pytest.fixture
def judge_server() -> Iterator[ScriptedLLMServer]:
    """The judge model: answers 8/10 unless a test scripts otherwise."""
    with ScriptedLLMServer(default=verdict()) as server:
        yield server


@pytest.fixture
def make_judge() -> Callable[..., OpenAICompatibleJudge]:
    def make(server: ScriptedLLMServer, **options: Any) -> OpenAICompatibleJudge:
        options.setdefault("cache", False)
        return OpenAICompatibleJudge(
            "scripted-model", base_url=server.base_url, api_key="test-key", **options
        )

    return make


@pytest.fixture
def client(
    judge_server: ScriptedLLMServer, make_judge: Callable[..., OpenAICompatibleJudge]
) -> Iterator[Composo]:
    with Composo(judge=make_judge(judge_server)) as composo:
        yield composo
