"""Real inference servers' quirks, against stubs: llama-cpp-python's HTTP 500 for
`response_format: json_schema`, runaway generation, and cached prompt tokens in usage."""

from __future__ import annotations

import json
import time

import pytest

from tests.judges.helpers import graded
from tracejudge.errors import APIError, MalformedError
from tracejudge.judges import JudgeRequest
from tracejudge.testing import RecordedRequest, Reply, ScriptedLLMServer

REQUEST = JudgeRequest.of("Reward accurate answers", "user: 2+2?\nassistant: 4")

# What llama-cpp-python's server answers (llama_cpp/server/errors.py wraps the exception).
_LLAMA_CPP_PYTHON_500 = {
    "error": {
        "message": 'response_format type must be one of "text" or "json_object", but got: '
        "json_schema",
        "type": "internal_server_error",
        "param": None,
        "code": None,
    }
}


async def test_a_500_naming_the_format_steps_down_without_retrying(
    server: ScriptedLLMServer, make_judge
) -> None:
    server.add(Reply.raw(500, _LLAMA_CPP_PYTHON_500), graded(8))
    judge = make_judge(num_retries=3, backoff_base=60.0)
    started = time.perf_counter()
    verdict = await judge.judge(REQUEST)
    assert time.perf_counter() - started < 60 / 4  # no backoff (a minute): stepped down at once
    assert verdict.score == pytest.approx(7 / 9)
    first, second = (r.json for r in server.requests)
    assert first["response_format"]["type"] == "json_schema"
    assert second["response_format"] == {"type": "json_object"}
    assert judge.response_format == "json_object"


async def test_a_500_that_names_nothing_droppable_is_retried_then_raised(
    server: ScriptedLLMServer, make_judge
) -> None:
    server.add(Reply.error(500, message="CUDA out of memory"), Reply.error(500, message="again"))
    with pytest.raises(APIError):
        await make_judge(num_retries=1).judge(REQUEST)
    assert len(server.requests) == 2
    assert all(r.json["response_format"]["type"] == "json_schema" for r in server.requests)


def _runaway(request: RecordedRequest) -> Reply:
    """A small model that never closes its object: it writes until max_tokens, or (with no
    bound) until the client gives up."""
    bound = request.json.get("max_tokens")
    if not isinstance(bound, int):
        return Reply.text("{}", delay=30.0)
    text = '{"explanation": "' + "The sky is blue. " * (bound // 4)
    return Reply.text(text, finish_reason="length")


async def test_runaway_generation_is_bounded_by_the_default_max_tokens(
    server: ScriptedLLMServer, make_judge
) -> None:
    server.add(_runaway, _runaway)
    judge = make_judge(timeout=20)
    started = time.perf_counter()
    with pytest.raises(MalformedError) as caught:
        await judge.judge(REQUEST)
    # bounded: long before the unbounded reply (30 s away) would have come
    assert time.perf_counter() - started < 30 / 4
    assert "cut off at the token limit" in str(caught.value)
    first, second = (r.json for r in server.requests)
    assert first["max_tokens"] == 2048
    # The re-ask says the reply was cut off.
    assert "cut off at the token limit" in second["messages"][-1]["content"]


async def test_reasoning_models_get_a_larger_default_bound(make_judge) -> None:
    assert make_judge(model="o3-mini").max_tokens == 16_384
    assert make_judge(model="gpt-4.1-mini").max_tokens == 2048
    assert make_judge(model="x", max_tokens=None).max_tokens is None


@pytest.mark.parametrize(
    ("usage_extra", "cached"),
    [
        ({"prompt_tokens_details": {"cached_tokens": 900}}, 900),  # OpenAI, vLLM
        ({}, 0),
    ],
)
async def test_cached_prompt_tokens_are_read_from_openai_usage(
    server: ScriptedLLMServer, make_judge, usage_extra: dict, cached: int
) -> None:
    body = {
        "id": "x",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": json.dumps({"explanation": "ok", "applicable": True, "score": 9}),
                },
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": 1000,
            "completion_tokens": 10,
            "total_tokens": 1010,
            **usage_extra,
        },
    }
    server.add(Reply.raw(200, body))
    verdict = await make_judge().judge(REQUEST)
    assert verdict.usage.input_tokens == 1000
    assert verdict.usage.cached_input_tokens == cached


async def test_llama_cpp_cache_n_is_read_when_usage_has_no_details(
    server: ScriptedLLMServer, make_judge
) -> None:
    body = {
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": '{"explanation": "ok", "applicable": true, "score": 5}',
                },
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 274, "completion_tokens": 31, "total_tokens": 305},
        "timings": {"cache_n": 264, "prompt_n": 10},
    }
    server.add(Reply.raw(200, body))
    verdict = await make_judge().judge(REQUEST)
    assert verdict.usage.cached_input_tokens == 264


async def test_anthropic_cache_reads_and_writes_are_counted(
    server: ScriptedLLMServer, make_anthropic
) -> None:
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "content": [
            {"type": "text", "text": '{"explanation": "ok", "applicable": true, "score": 5}'}
        ],
        "stop_reason": "end_turn",
        "usage": {
            "input_tokens": 20,
            "output_tokens": 10,
            "cache_read_input_tokens": 3000,
            "cache_creation_input_tokens": 500,
        },
    }
    server.add(Reply.raw(200, body))
    verdict = await make_anthropic().judge(REQUEST)
    assert verdict.usage.input_tokens == 3520
    assert verdict.usage.cached_input_tokens == 3000
    assert verdict.usage.cache_write_tokens == 500
