"""The Anthropic Messages API judge, end to end against the scripted server."""

from __future__ import annotations

import json

import pytest

from tracejudge.errors import AuthenticationError, ConfigurationError, MalformedError
from tracejudge.judges import AnthropicJudge, JudgeRequest, judge_from_spec
from tracejudge.testing import Reply, ScriptedLLMServer

REQUEST = JudgeRequest.of("Reward accurate answers", "user: 2+2?\nassistant: 4")


async def test_anthropic_judge_end_to_end(server: ScriptedLLMServer, make_anthropic) -> None:
    server.add(
        Reply.text(
            "```json\n"
            + json.dumps({"explanation": "Correct.", "applicable": True, "score": 10})
            + "\n```",
            usage={"input_tokens": 200, "output_tokens": 20},
        )
    )
    judge = make_anthropic(model="claude-sonnet-4-5")
    verdict = await judge.judge(REQUEST)
    assert judge.name == "anthropic:claude-sonnet-4-5"
    assert verdict.score == 1.0
    assert verdict.explanation == "Correct."
    assert (verdict.usage.input_tokens, verdict.usage.output_tokens) == (200, 20)
    assert verdict.usage.total_tokens == 220

    (sent,) = server.requests
    assert sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == "test-key"
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in sent.headers
    body = sent.json
    assert body["model"] == "claude-sonnet-4-5"
    assert body["max_tokens"] > 0
    assert "Reward accurate answers" not in body["system"]  # one system prompt for all
    assert [m["role"] for m in body["messages"]] == ["user"]
    data, asked = body["messages"][0]["content"]
    # The data block is the cacheable prefix; the criterion comes after it, uncached.
    assert data["cache_control"] == {"type": "ephemeral"} and "cache_control" not in asked
    assert "Reward accurate answers" in asked["text"]
    assert "response_format" not in body and "logprobs" not in body


async def test_anthropic_base_url_with_v1_is_accepted(
    server: ScriptedLLMServer, make_anthropic
) -> None:
    server.add(Reply.text('{"explanation": "x", "applicable": true, "passed": false}'))
    judge = make_anthropic(base_url=server.url + "/v1")
    verdict = await judge.judge(JudgeRequest.of("Passes if it greets", "assistant: bye"))
    assert verdict.score == 0.0
    assert server.requests[0].path == "/v1/messages"


async def test_anthropic_reask_and_malformed(server: ScriptedLLMServer, make_anthropic) -> None:
    server.add(Reply.text("Eight."), Reply.text("Still eight."))
    with pytest.raises(MalformedError):
        await make_anthropic().judge(REQUEST)
    second = server.requests[1].json["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]


async def test_anthropic_auth_error_names_the_key_variable(
    server: ScriptedLLMServer, make_anthropic
) -> None:
    server.add(Reply.error(401, message="invalid x-api-key"))
    with pytest.raises(AuthenticationError) as caught:
        await make_anthropic().judge(REQUEST)
    assert "ANTHROPIC_API_KEY" in str(caught.value)


def test_anthropic_needs_a_key_for_the_hosted_api() -> None:
    with pytest.raises(ConfigurationError, match="ANTHROPIC_API_KEY"):
        AnthropicJudge("claude-sonnet-4-5")


def test_anthropic_spec_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    judge = judge_from_spec("anthropic:claude-sonnet-4-5")
    assert isinstance(judge, AnthropicJudge)
    assert judge.api_key == "sk-ant-test"
    assert judge.base_url == "https://api.anthropic.com"
