"""`JudgeOptions`: a judge's options as one validated value, passed whole to either
backend (as httpx passes `Limits`), each field still a keyword of the public
constructors, the keyword winning over the same field of `options`; requests to a real
scripted model on loopback carry what the options say."""

from __future__ import annotations

import json

import pytest

from tracejudge.errors import ConfigurationError
from tracejudge.judges import AnthropicJudge, JudgeOptions, JudgeRequest, OpenAICompatibleJudge
from tracejudge.testing import Reply, ScriptedLLMServer

VERDICT = json.dumps({"explanation": "Fine.", "applicable": True, "score": 8})


def request() -> JudgeRequest:
    return JudgeRequest.of("Reward correct answers", "user: 2+2?\nassistant: 4")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("timeout", 0, "timeout must be positive"),
        ("max_concurrency", 0, "max_concurrency must be at least 1"),
        ("max_response_bytes", 10, "max_response_bytes must be at least 1024"),
        ("max_response_bytes", 2048.0, "max_response_bytes must be a whole number"),
        ("max_input_tokens", 100, "max_input_tokens must be a whole number of tokens"),
    ],
)
def test_a_bad_option_is_refused_naming_it(field: str, value: object, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        JudgeOptions(**{field: value})  # type: ignore[arg-type]
    # the same check, whichever way the option is given
    with pytest.raises(ConfigurationError, match=message):
        OpenAICompatibleJudge("m", base_url="http://127.0.0.1:9/v1", **{field: value})  # type: ignore[arg-type]


def test_options_are_normalised_once() -> None:
    options = JudgeOptions(timeout=5, num_retries=0, backoff_base=1)
    assert (options.timeout, options.num_retries, options.backoff_base) == (5.0, 1, 1.0)
    assert options.request_timeout is None


def test_one_options_value_serves_both_backends_and_keywords_win() -> None:
    options = JudgeOptions(timeout=7, max_concurrency=3, num_retries=4, temperature=None)
    openai = OpenAICompatibleJudge("m", base_url="http://127.0.0.1:9/v1", options=options)
    anthropic = AnthropicJudge(
        "claude-x", base_url="http://127.0.0.1:9", options=options, max_concurrency=5
    )
    for judge in (openai, anthropic):
        assert (judge.timeout, judge.num_retries, judge.temperature) == (7.0, 4, None)
        assert judge.options.timeout == 7.0
    assert (openai.max_concurrency, anthropic.max_concurrency) == (3, 5)
    assert options.max_concurrency == 3  # the value given is not changed


def test_max_tokens_not_given_is_each_backends_default() -> None:
    base = "http://127.0.0.1:9"
    assert OpenAICompatibleJudge("gpt-4.1-mini", base_url=base).max_tokens == 2048
    assert OpenAICompatibleJudge("o3", base_url=base).max_tokens == 16384
    assert AnthropicJudge("claude-x", base_url=base).max_tokens == 2048
    assert OpenAICompatibleJudge("o3", base_url=base, max_tokens=None).max_tokens is None
    given = JudgeOptions(max_tokens=300)
    assert AnthropicJudge("claude-x", base_url=base, options=given).max_tokens == 300


def test_options_must_be_judge_options() -> None:
    with pytest.raises(ConfigurationError, match="options must be a JudgeOptions, got dict"):
        OpenAICompatibleJudge("m", base_url="http://127.0.0.1:9/v1", options={"timeout": 3})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="timout"):
        OpenAICompatibleJudge("m", base_url="http://127.0.0.1:9/v1", timout=3)  # type: ignore[call-arg]


async def test_the_options_reach_the_requests() -> None:
    with ScriptedLLMServer(default=Reply.text(VERDICT)) as model:
        options = JudgeOptions(
            headers={"x-team": "evals"}, extra_body={"seed": 11}, max_tokens=321, cache=False
        )
        judge = OpenAICompatibleJudge("m", base_url=model.base_url, options=options)
        try:
            verdict = await judge.judge(request())
            await judge.judge(request())  # no cache: asked again
        finally:
            await judge.aclose()
        assert verdict.score == pytest.approx(7 / 9)
        assert len(model.requests) == 2
        sent = model.requests[0]
        assert sent.headers.get("x-team") == "evals"
        assert (sent.json["seed"], sent.json["max_tokens"]) == (11, 321)
