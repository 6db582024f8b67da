"""Fixtures for judge tests: a scripted judge model on loopback and judges pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from tracejudge.judges import AnthropicJudge, HTTPJudge, OpenAICompatibleJudge
from tracejudge.testing import ScriptedLLMServer

_ENV = (
    "TRACEJUDGE_JUDGE",
    "TRACEJUDGE_JUDGE_MODEL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No judge test may depend on (or leak a key from) the developer's environment."""
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer() as srv:
        yield srv


@pytest.fixture
async def _judges() -> AsyncIterator[list[HTTPJudge]]:
    made: list[HTTPJudge] = []
    yield made
    for judge in made:
        await judge.aclose()


def _test_options(options: dict[str, Any], base_url: str) -> dict[str, Any]:
    options.setdefault("base_url", base_url)
    options.setdefault("api_key", "test-key")
    options.setdefault("backoff_base", 0.01)  # keep retry tests fast
    options.setdefault("cache", False)  # each test scripts its own replies
    return options


@pytest.fixture
def make_judge(
    server: ScriptedLLMServer, _judges: list[HTTPJudge]
) -> Callable[..., OpenAICompatibleJudge]:
    """Build OpenAI-compatible judges on the scripted server: fast backoff, no cache."""

    def make(**options: Any) -> OpenAICompatibleJudge:
        model = options.pop("model", "judge-model")
        judge = OpenAICompatibleJudge(model, **_test_options(options, server.base_url))
        _judges.append(judge)
        return judge

    return make


@pytest.fixture
def make_anthropic(
    server: ScriptedLLMServer, _judges: list[HTTPJudge]
) -> Callable[..., AnthropicJudge]:
    """Build Anthropic judges on the scripted server's /v1/messages."""

    def make(**options: Any) -> AnthropicJudge:
        model = options.pop("model", "claude-judge")
        judge = AnthropicJudge(model, **_test_options(options, server.url))
        _judges.append(judge)
        return judge

    return make
