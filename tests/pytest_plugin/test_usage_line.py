"""The pytest plugin says what the judge used: one line in a failing assertion's report,
and one line after the tests for the whole session (calls, tokens, dollars)."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

USER_TESTS = """
import json

import pytest

from tracejudge.judges import OpenAICompatibleJudge
from tracejudge.models import MultiAgentTrace
from tracejudge.pytest_plugin import TraceAssertionError, assert_trace
from tracejudge.testing import Reply, ScriptedLLMServer

TRACE = MultiAgentTrace.model_validate({
    "root_agent_instance_id": "p1",
    "agent_instance_by_id": {
        "p1": {"id": "p1", "name": "planner", "interactions": [
            {"input_messages": [{"role": "user", "content": "plan"}],
             "output_messages": [{"content": "ask the writer"}]}, "w1"]},
        "w1": {"id": "w1", "name": "writer", "interactions": [
            {"input_messages": [{"role": "user", "content": "write"}],
             "output_messages": [{"content": "done"}]}]},
    },
})


def completion(score):
    verdict = json.dumps({"explanation": "Half done.", "applicable": True, "score": score})
    return Reply.raw(200, {
        "id": "c", "object": "chat.completion", "created": 1, "model": "gpt-4.1-mini",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": verdict}}],
        "usage": {"prompt_tokens": 10000, "completion_tokens": 500, "total_tokens": 10500,
                  "prompt_tokens_details": {"cached_tokens": 8000}},
    })


@pytest.fixture
def judge():
    with ScriptedLLMServer(default=completion(5)) as model:
        yield OpenAICompatibleJudge(
            "gpt-4.1-mini", base_url=model.base_url, api_key="k", cache=False, logprobs=False
        )


def test_falls_short(judge):
    with pytest.raises(TraceAssertionError) as caught:
        assert_trace(TRACE, criteria=["Reward complete answers"], judge=judge, min_score=0.9)
    usage = caught.value.verdict.usage
    assert (usage.calls, usage.cached_input_tokens) == (2, 16000)
    raise caught.value


def test_passes(judge):
    verdict = assert_trace(TRACE, criteria=["Reward complete answers"], judge=judge, min_score=0.1)
    assert verdict.usage.calls == 2
"""


def test_the_judge_s_calls_tokens_and_cost_are_one_line(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("TRACEJUDGE_JUDGE", "OPENAI_API_KEY", "OPENAI_BASE_URL", "COMPOSO_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(test_judged=USER_TESTS)
    result = pytester.runpytest("-p", "tracejudge.pytest_plugin", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    # gpt-4.1-mini: 2,000 fresh prompt tokens at $0.40, 8,000 cached at $0.10, 500 out at
    # $1.60 per million: $0.002 a call
    result.stdout.fnmatch_lines(
        [
            "*planner scored 0.44 on Reward complete answers (below 0.9); 2 failed*",
            "E           2 judge calls, 20,000 tokens in (16,000 cached), 1,000 out, $0.0048*",
        ]
    )
    result.stdout.fnmatch_lines(
        ["tracejudge: 4 judge calls, 40,000 tokens in (32,000 cached), 2,000 out, $0.0096"]
    )
