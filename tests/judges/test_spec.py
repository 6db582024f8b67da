"""Choosing a judge from a spec string or from the environment."""

from __future__ import annotations

import pytest

from tests.judges.helpers import graded
from tracejudge.errors import ConfigurationError
from tracejudge.judges import (
    HOW_TO_CONFIGURE_A_JUDGE,
    AnthropicJudge,
    Judge,
    JudgeRequest,
    OpenAICompatibleJudge,
    Verdict,
    default_judge,
    judge_from_spec,
)
from tracejudge.testing import ScriptedLLMServer


def test_openai_spec_makes_an_openai_compatible_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    judge = judge_from_spec("openai:gpt-4.1-mini")
    assert isinstance(judge, OpenAICompatibleJudge)
    assert judge.name == "openai:gpt-4.1-mini"
    assert judge.model == "gpt-4.1-mini"
    assert judge.base_url == "https://api.openai.com/v1"
    assert judge.api_key == "sk-test"


def test_a_bare_model_name_is_openai_compatible(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:8000/v1")
    judge = judge_from_spec("Qwen/Qwen2.5-7B-Instruct", timeout=5.0)
    assert isinstance(judge, OpenAICompatibleJudge)
    assert judge.name == "openai:Qwen/Qwen2.5-7B-Instruct"
    assert judge.base_url == "http://localhost:8000/v1"
    assert judge.api_key is None  # fine for a local server
    assert judge.timeout == 5.0


def test_provider_prefixes_keep_colons_in_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    judge = judge_from_spec("ollama:llama3.1:8b")
    assert isinstance(judge, OpenAICompatibleJudge)
    assert judge.model == "llama3.1:8b"
    assert judge.base_url == "http://localhost:11434/v1"
    assert isinstance(judge_from_spec("Anthropic:claude-x", api_key="k"), AnthropicJudge)


def test_unknown_provider_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigurationError) as caught:
        judge_from_spec("gemini:gemini-2.5-pro")
    message = str(caught.value)
    assert "'gemini'" in message
    for provider in ("openai", "anthropic", "ollama"):
        assert provider in message


def test_spec_without_model_or_empty_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="names no model"):
        judge_from_spec("openai:")
    with pytest.raises(ConfigurationError):
        judge_from_spec("   ")


def test_hosted_openai_without_a_key_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        judge_from_spec("openai:gpt-4.1-mini")


def test_a_judge_object_is_returned_as_it_is() -> None:
    class MyJudge:
        name = "mine"

        async def judge(self, request: JudgeRequest) -> Verdict:
            return Verdict(score=1.0, explanation="always")

        async def aclose(self) -> None:
            return None

    mine = MyJudge()
    assert isinstance(mine, Judge)
    assert judge_from_spec(mine) is mine


def test_default_judge_is_none_without_configuration() -> None:
    assert default_judge() is None
    with pytest.raises(ConfigurationError) as caught:
        judge_from_spec(None)
    assert str(caught.value) == HOW_TO_CONFIGURE_A_JUDGE


def test_how_to_configure_names_every_way() -> None:
    for words in ("judge='openai:gpt-4.1-mini'", "TRACEJUDGE_JUDGE", "OPENAI_API_KEY"):
        assert words in HOW_TO_CONFIGURE_A_JUDGE
    assert "OPENAI_BASE_URL" in HOW_TO_CONFIGURE_A_JUDGE


def test_default_judge_prefers_tracejudge_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACEJUDGE_JUDGE", "anthropic:claude-sonnet-4-5")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    judge = default_judge()
    assert isinstance(judge, AnthropicJudge)
    assert judge.name == "anthropic:claude-sonnet-4-5"


@pytest.mark.parametrize("variable", ["OPENAI_API_KEY", "OPENAI_BASE_URL"])
def test_default_judge_from_openai_variables(
    monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, "http://localhost:11434/v1" if "URL" in variable else "sk-x")
    judge = default_judge()
    assert isinstance(judge, OpenAICompatibleJudge)
    assert judge.model == "gpt-4.1-mini"
    monkeypatch.setenv("TRACEJUDGE_JUDGE_MODEL", "llama3.1")
    assert default_judge().model == "llama3.1"


async def test_env_configured_judge_reaches_a_local_server_without_a_key(
    server: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("TRACEJUDGE_JUDGE_MODEL", "local-model")
    server.add(graded(8))
    judge = default_judge(cache=False)
    assert judge is not None
    verdict = await judge.judge(JudgeRequest.of("Reward accuracy", "assistant: 4"))
    await judge.aclose()
    assert verdict.score == pytest.approx(7 / 9)
    sent = server.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.json["model"] == "local-model"
    assert "authorization" not in sent.headers


async def test_a_key_is_sent_as_bearer(server: ScriptedLLMServer, make_judge) -> None:
    server.add(graded(8))
    await make_judge(api_key="sk-abc").judge(JudgeRequest.of("Reward x", "assistant: y"))
    assert server.requests[0].headers["authorization"] == "Bearer sk-abc"


async def test_azure_hosts_get_the_key_as_api_key_and_keep_the_query() -> None:
    import httpx

    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        content = '{"explanation": "ok", "applicable": true, "passed": true}'
        return httpx.Response(200, json={"choices": [{"message": {"content": content}}]})

    judge = OpenAICompatibleJudge(
        "gpt-4o",
        base_url="https://acme.openai.azure.com/openai/deployments/judge?api-version=2024-10-21",
        api_key="azure-key",
        transport=httpx.MockTransport(handler),
        cache=False,
    )
    verdict = await judge.judge(JudgeRequest.of("Passes if polite", "assistant: thanks"))
    await judge.aclose()
    assert verdict.score == 1.0
    url = seen[0].url
    assert url.path == "/openai/deployments/judge/chat/completions"
    assert url.params["api-version"] == "2024-10-21"
    assert seen[0].headers["api-key"] == "azure-key"
    assert "authorization" not in seen[0].headers
