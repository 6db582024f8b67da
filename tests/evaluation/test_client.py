"""`Composo.evaluate()` in process: the seed's examples, with a scripted judge over HTTP."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from openai.types.responses import Response

from tests.evaluation.conftest import (
    binary,
    criterion_of,
    judge_question,
    judged_content,
    verdict,
)
from tests.evaluation.test_adapt import MCP_OUTPUT, SPACEX_OUTPUT, response_json
from tests.evaluation.test_render import TOOL_CONVERSATION, WEATHER_TOOL
from tracejudge import (
    AsyncComposo,
    BadRequestError,
    Composo,
    ConfigurationError,
    EvaluationResponse,
    criteria,
)
from tracejudge.judges import HOW_TO_CONFIGURE_A_JUDGE, OpenAICompatibleJudge
from tracejudge.models import MultiAgentTrace, ScoreResponse
from tracejudge.testing import RecordedRequest, Reply, ScriptedLLMServer

CAPITAL = [
    {"role": "user", "content": "What's the capital of France?"},
    {"role": "assistant", "content": "The capital of France is Paris."},
]

MakeJudge = Callable[..., OpenAICompatibleJudge]


def wait_for_task(client: Composo, task_id: str, timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        task = client.get_task(task_id)
        if task.status in ("done", "failed") or time.monotonic() > deadline:
            return task
        time.sleep(0.02)


# --------------------------------------------------------------------------- seed examples


def test_basic_evaluation(client: Composo, judge_server: ScriptedLLMServer) -> None:
    judge_server.add(verdict(10, "Paris is correct."))
    result = client.evaluate(
        messages=CAPITAL,
        criteria="Reward accurate and informative responses",
        tags={"environment": "production", "version": "1.0.0"},
    )
    assert isinstance(result, EvaluationResponse)
    assert result.score == 1.0
    assert result.explanation == "Paris is correct."
    assert result.cleaned_explanation is None
    assert result.criterion == "Reward accurate and informative responses"
    assert result.usage is not None and result.usage.calls == 1
    (request,) = judge_server.requests
    assert "The capital of France is Paris." in judged_content(request)
    assert criterion_of(request) == "Reward accurate and informative responses"


def test_multiple_criteria_give_a_list_in_order(
    client: Composo, judge_server: ScriptedLLMServer
) -> None:
    scores = {
        "Reward accurate information": 10,
        "Reward clear communication": 7,
        "Penalize overly technical jargon": 1,
    }
    judge_server.default = lambda request: verdict(scores.get(criterion_of(request), 5))
    results = client.evaluate(messages=CAPITAL, criteria=list(scores))
    assert isinstance(results, list)
    assert [r.criterion for r in results] == list(scores)
    assert [round(r.score, 3) for r in results] == [1.0, round(6 / 9, 3), 0.0]
    assert len(judge_server.requests) == 3
    # A list in, a list out (even a list of one); one criterion on its own, one answer.
    listed = client.evaluate(messages=CAPITAL, criteria=["Reward accuracy"])
    assert isinstance(listed, list) and [r.criterion for r in listed] == ["Reward accuracy"]
    one = client.evaluate(messages=CAPITAL, criteria="Reward accuracy")
    assert isinstance(one, EvaluationResponse) and one.criterion == "Reward accuracy"


def test_binary_criteria(client: Composo, judge_server: ScriptedLLMServer) -> None:
    judge_server.add(binary(True), binary(True))
    passes, fails = client.evaluate(
        messages=CAPITAL,
        criteria=["Passes if the answer names Paris", "Fails if the answer is rude"],
    )
    assert passes.score == 1.0 and fails.score == 1.0
    kinds = sorted(
        line
        for r in judge_server.requests
        for line in judge_question(r).splitlines()
        if line.startswith("Criterion kind:")
    )
    assert [k.split(" (")[0] for k in kinds] == [
        "Criterion kind: Fails if",
        "Criterion kind: Passes if",
    ]


def test_not_applicable_is_a_null_score(client: Composo, judge_server: ScriptedLLMServer) -> None:
    judge_server.add(Reply.text(json.dumps({"explanation": "No tools here.", "applicable": False})))
    result = client.evaluate(messages=CAPITAL, criteria=criteria.agent_tool_use)
    assert result.score is None
    assert result.explanation == "No tools here."


def test_tool_call_evaluation_shows_calls_results_and_definitions(
    client: Composo, judge_server: ScriptedLLMServer
) -> None:
    result = client.evaluate(
        messages=TOOL_CONVERSATION,
        tools=[WEATHER_TOOL],
        criteria="Reward correct tool usage and accurate responses",
    )
    assert result.score == pytest.approx(7 / 9)
    content = judged_content(judge_server.requests[0])
    assert "- get_weather: Get current weather for a location" in content
    assert "calls tool get_weather (id call_123)" in content
    assert 'arguments: {"location": "San Francisco"}' in content
    assert "tool result (get_weather, id call_123)" in content
    assert '{"temp": 65, "condition": "sunny"}' in content


def test_evaluate_latest_changes_what_is_judged(
    client: Composo, judge_server: ScriptedLLMServer
) -> None:
    messages = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "Capital of France?"},
        {"role": "assistant", "content": "Paris."},
    ]
    client.evaluate(messages=messages, criteria="Reward helpfulness")
    client.evaluate(messages=messages, criteria="Reward helpfulness", evaluate_latest=False)
    latest, every = (judged_content(r) for r in judge_server.requests)
    assert "assistant:\nHello! How can I help?" in latest
    assert "assistant [judged]:\nParis." in latest
    assert "assistant [judged]:\nHello! How can I help?" in every
    assert "assistant [judged]:\nParis." in every
    assert "latest response" in latest and "every assistant response" in every


def test_non_blocking_evaluation_and_get_task(
    client: Composo, judge_server: ScriptedLLMServer
) -> None:
    judge_server.add(Reply.text(json.dumps({"explanation": "ok", "score": 10}), delay=0.3))
    submitted = client.evaluate(messages=CAPITAL, criteria="Reward accuracy", block=False)
    assert set(submitted) == {"task_id"}
    first = client.get_task(submitted["task_id"])
    assert first.status in ("queued", "running")
    done = wait_for_task(client, submitted["task_id"])
    assert done.status == "done"
    assert done.result["score"] == 1.0
    assert done.result["criterion"] == "Reward accuracy"
    # A finished task is read once.
    with pytest.raises(BadRequestError, match="unknown task id"):
        client.get_task(submitted["task_id"])


def test_non_blocking_failure_is_reported_by_the_task(
    client: Composo, judge_server: ScriptedLLMServer
) -> None:
    judge_server.default = Reply.error(401, message="bad key")
    submitted = client.evaluate(messages=CAPITAL, criteria="Reward accuracy", block=False)
    assert set(submitted) == {"task_id"}
    done = wait_for_task(client, submitted["task_id"])
    assert done.status == "failed"
    assert "AuthenticationError" in done.error


def test_unknown_task_id_is_a_clear_error(client: Composo) -> None:
    with pytest.raises(BadRequestError, match="unknown task id 'nope'"):
        client.get_task("nope")


def test_responses_api_builtin_tools(client: Composo, judge_server: ScriptedLLMServer) -> None:
    input_text = (
        "Search the web for the latest news story on SpaceX and write a Python script "
        "to plot their latest 3 launch dates"
    )
    response = Response.model_validate(
        response_json(
            SPACEX_OUTPUT,
            tools=[
                {"type": "web_search"},
                {"type": "code_interpreter", "container": {"type": "auto"}},
            ],
        )
    )
    result = client.evaluate(
        input=input_text,
        result=response,
        criteria=(
            "Reward responses that search the web and produce Python code based on the results"
        ),
    )
    assert result.score == pytest.approx(7 / 9)
    content = judged_content(judge_server.requests[0])
    assert "user:\nSearch the web for the latest news story on SpaceX" in content
    assert "- web_search" in content and "- code_interpreter" in content
    assert "assistant [judged] calls tool web_search (id ws_1)" in content
    assert "assistant [judged] calls tool code_interpreter (id ci_1)" in content
    assert "plotted 3 launches" in content
    assert "assistant [judged]:\nSpaceX launched Starship" in content


def test_responses_api_remote_mcp_server(client: Composo, judge_server: ScriptedLLMServer) -> None:
    response = Response.model_validate(
        response_json(
            MCP_OUTPUT,
            tools=[
                {
                    "type": "mcp",
                    "server_label": "coingecko",
                    "server_url": "https://mcp.api.coingecko.com/mcp",
                    "require_approval": "never",
                }
            ],
        )
    )
    client.evaluate(
        input="What are the current prices of Bitcoin and Ethereum in USD?",
        result=response,
        criteria="Reward responses that use the MCP tool to retrieve live cryptocurrency prices",
    )
    content = judged_content(judge_server.requests[0])
    assert "- get_simple_price: (MCP server coingecko)" in content
    assert "calls tool get_simple_price (id mcp_1)" in content
    assert '{"bitcoin": {"usd": 97000}, "ethereum": {"usd": 3400}}' in content


def test_result_is_appended_to_messages(client: Composo, judge_server: ScriptedLLMServer) -> None:
    client.evaluate(
        messages=[{"role": "user", "content": "Capital of Italy?"}],
        result={"role": "assistant", "content": "Rome."},
        criteria="Reward accuracy",
        system="Answer in one word.",
    )
    content = judged_content(judge_server.requests[0])
    assert "system:\nAnswer in one word." in content
    assert "assistant [judged]:\nRome." in content


def test_context_manager_closes_the_client(
    judge_server: ScriptedLLMServer, make_judge: MakeJudge
) -> None:
    with Composo(judge=make_judge(judge_server)) as client:
        assert client.evaluate(messages=CAPITAL, criteria="Reward accuracy").score is not None
    with pytest.raises(RuntimeError, match="closed"):
        client.evaluate(messages=CAPITAL, criteria="Reward accuracy")


def test_explanation_cleaning_end_user(client: Composo, judge_server: ScriptedLLMServer) -> None:
    judge_server.add(verdict(9, "The tool call was right.", cleaned_explanation="Good answer."))
    result = client.evaluate(
        messages=CAPITAL, criteria="Reward accuracy", explanation_cleaning="end_user"
    )
    assert result.cleaned_explanation == "Good answer."
    assert "cleaned_explanation" in judge_question(judge_server.requests[0])
    with pytest.raises(BadRequestError, match="explanation_cleaning='internal'"):
        client.evaluate(
            messages=CAPITAL, criteria="Reward accuracy", explanation_cleaning="internal"
        )


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("", r"criteria is empty"),
        (["Reward a", "   "], r"criteria\[1\] is empty"),
        (["Reward a", "x" * 4097], r"criteria\[1\] .* 4097 characters long; the limit is 4096"),
        ([], r"empty list"),
        (None, r"criteria is required"),
        ([42], r"criteria\[0\] is a int"),
    ],
)
def test_criteria_validation(client: Composo, bad: Any, message: str) -> None:
    with pytest.raises(BadRequestError, match=message):
        client.evaluate(messages=CAPITAL, criteria=bad)


def test_criterion_without_known_prefix_is_judged_as_reward(
    client: Composo, judge_server: ScriptedLLMServer
) -> None:
    client.evaluate(messages=CAPITAL, criteria="the answer is accurate")
    assert "Criterion kind: Reward" in judge_question(judge_server.requests[0])


@pytest.mark.parametrize(
    ("tags", "message"),
    [
        ({"k" * 65: "v"}, r"tag key 'kkkk.* 65 characters long"),
        ({"env": "v" * 65}, r"tag 'env' has a value 65 characters long"),
        ({"env": {"nested": 1}}, r"tag 'env' has a nested dict value"),
        ({"env": [1, 2]}, r"tag 'env' has a nested list value"),
        ({"env": None}, r"tag 'env' has a NoneType value"),
        ({1: "v"}, r"tag key 1 is a int"),
        ("env=prod", r"tags must be a dict"),
    ],
)
def test_tags_validation(client: Composo, tags: Any, message: str) -> None:
    with pytest.raises(BadRequestError, match=message):
        client.evaluate(messages=CAPITAL, criteria="Reward accuracy", tags=tags)


def test_tag_values_may_be_numbers_and_bools(client: Composo) -> None:
    result = client.evaluate(
        messages=CAPITAL,
        criteria="Reward accuracy",
        tags={"version": 2, "ratio": 0.5, "beta": True, "env": "prod"},
    )
    assert result.score is not None


def test_messages_and_input_are_mutually_exclusive(client: Composo) -> None:
    with pytest.raises(BadRequestError, match="either messages= .* or input= .* not both"):
        client.evaluate(messages=CAPITAL, input="hi", criteria="Reward accuracy")
    with pytest.raises(BadRequestError, match="messages= is required"):
        client.evaluate(criteria="Reward accuracy")


def test_conversation_without_assistant_response_is_rejected(client: Composo) -> None:
    with pytest.raises(BadRequestError, match="no assistant response"):
        client.evaluate(messages=[{"role": "user", "content": "hi"}], criteria="Reward accuracy")


def test_evaluate_latest_must_be_a_bool(client: Composo) -> None:
    with pytest.raises(BadRequestError, match="evaluate_latest"):
        client.evaluate(messages=CAPITAL, criteria="Reward accuracy", evaluate_latest="yes")


# --------------------------------------------------------------------------- choosing a judge


def test_no_judge_configured_is_one_clear_error_at_evaluate_time() -> None:
    client = Composo()  # constructing never fails
    try:
        with pytest.raises(ConfigurationError) as caught:
            client.evaluate(messages=CAPITAL, criteria="Reward accuracy")
        assert str(caught.value) == HOW_TO_CONFIGURE_A_JUDGE
        assert client.judge is None
    finally:
        client.close()


def test_judge_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, judge_server: ScriptedLLMServer
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", judge_server.base_url)
    monkeypatch.setenv("TRACEJUDGE_JUDGE", "openai:scripted-model")
    with Composo() as client:
        assert client.judge is not None and client.judge.name == "openai:scripted-model"
        assert client.evaluate(messages=CAPITAL, criteria="Reward accuracy").score is not None
    assert judge_server.requests[0].json["model"] == "scripted-model"


def test_judge_spec_string(
    monkeypatch: pytest.MonkeyPatch, judge_server: ScriptedLLMServer
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", judge_server.base_url)
    # COMPOSO_API_KEY alone would choose the remote server; an explicit judge wins.
    monkeypatch.setenv("COMPOSO_API_KEY", "ck")
    with Composo(judge="openai:scripted-model", cache=False) as client:
        assert client.evaluate(messages=CAPITAL, criteria="Reward accuracy").score is not None
    assert len(judge_server.requests) == 1


def test_composo_api_key_beats_a_plain_openai_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("COMPOSO_API_KEY", "ck")
    with Composo() as client:
        assert client.judge is None
        assert "platform.composo.ai" in repr(client)


# --------------------------------------------------------------------------- checks, concurrency


class AnswerMentions:
    """A tiny deterministic check: does the agent's final output mention a word?"""

    def __init__(self, word: str) -> None:
        self.word = word
        self.name = f"mentions {word}"

    def evaluate(self, trace: MultiAgentTrace) -> dict[str, ScoreResponse | None]:
        results: dict[str, ScoreResponse | None] = {}
        for agent in trace.iter_agents():
            output = agent.final_output
            if output is None:
                results[agent.id] = None
            else:
                found = self.word.lower() in output.lower()
                results[agent.id] = ScoreResponse(
                    score=1.0 if found else 0.0,
                    explanation=f"{self.word!r} {'found' if found else 'missing'}",
                )
        return results


def test_checks_need_no_judge() -> None:
    with Composo() as client:
        result = client.evaluate(messages=CAPITAL, criteria=AnswerMentions("Paris"))
        assert result.score == 1.0
        assert result.criterion == "mentions Paris"
        with pytest.raises(ConfigurationError):
            client.evaluate(messages=CAPITAL, criteria=[AnswerMentions("Paris"), "Reward accuracy"])


def test_criteria_run_concurrently(judge_server: ScriptedLLMServer, make_judge: MakeJudge) -> None:
    judge_server.default = Reply.text(json.dumps({"explanation": "ok", "score": 5}), delay=0.4)
    with Composo(judge=make_judge(judge_server)) as client:
        results = client.evaluate(messages=CAPITAL, criteria=criteria.rag)
    assert len(results) == 4
    assert judge_server.max_in_flight > 1  # judged side by side, not one after another


def test_concurrency_is_bounded_by_the_judge(
    judge_server: ScriptedLLMServer, make_judge: MakeJudge
) -> None:
    judge_server.default = Reply.text(json.dumps({"explanation": "ok", "score": 5}), delay=0.1)
    with Composo(judge=make_judge(judge_server, max_concurrency=2)) as client:
        client.evaluate(messages=CAPITAL, criteria=criteria.agent)
    assert judge_server.max_in_flight == 2


def test_one_background_loop_serves_every_call_of_every_client(
    client: Composo, judge_server: ScriptedLLMServer, make_judge: MakeJudge
) -> None:
    from tracejudge import _sync

    client.evaluate(messages=CAPITAL, criteria="Reward accuracy")
    assert _sync._current is not None
    loop = _sync._current.loop
    client.evaluate(messages=CAPITAL, criteria="Reward accuracy")
    with Composo(judge=make_judge(judge_server)) as other:
        other.evaluate(messages=CAPITAL, criteria="Reward accuracy")
    assert _sync._current.loop is loop
    assert [t.name for t in threading.enumerate()].count("tracejudge-loop") == 1


# --------------------------------------------------------------------------- AsyncComposo


async def test_async_client_has_the_same_api(
    judge_server: ScriptedLLMServer, make_judge: MakeJudge
) -> None:
    judge_server.default = lambda request: verdict(
        10 if "Reward accuracy" in criterion_of(request) else 4
    )
    async with AsyncComposo(judge=make_judge(judge_server)) as client:
        single = await client.evaluate(messages=CAPITAL, criteria="Reward accuracy")
        assert single.score == 1.0
        many = await client.evaluate(messages=CAPITAL, criteria=["Reward accuracy", "Reward wit"])
        assert [r.score for r in many] == [1.0, pytest.approx(3 / 9)]
        submitted = await client.evaluate(messages=CAPITAL, criteria="Reward wit", block=False)
        for _ in range(200):
            task = await client.get_task(submitted["task_id"])
            if task.status == "done":
                break
            await asyncio.sleep(0.02)
        assert task.status == "done" and task.result["criterion"] == "Reward wit"
        with pytest.raises(BadRequestError):
            await client.evaluate(messages=CAPITAL, criteria="Reward x", tags={"a": [1]})


async def test_async_client_aclose(judge_server: ScriptedLLMServer, make_judge: MakeJudge) -> None:
    client = AsyncComposo(judge=make_judge(judge_server))
    await client.evaluate(messages=CAPITAL, criteria="Reward accuracy")
    await client.aclose()
    with pytest.raises(RuntimeError, match="closed"):
        await client.evaluate(messages=CAPITAL, criteria="Reward accuracy")


def test_request_capture_is_real_http(judge_server: ScriptedLLMServer, client: Composo) -> None:
    client.evaluate(messages=CAPITAL, criteria="Reward accuracy")
    request: RecordedRequest = judge_server.requests[0]
    assert request.path.endswith("/chat/completions")
    assert request.headers["authorization"] == "Bearer test-key"


def test_closing_cancels_unfinished_tasks(
    judge_server: ScriptedLLMServer, make_judge: MakeJudge
) -> None:
    judge_server.default = Reply.text(json.dumps({"explanation": "ok", "score": 5}), delay=60.0)
    client = Composo(judge=make_judge(judge_server))
    submitted = client.evaluate(messages=CAPITAL, criteria=("Reward a", "Reward b"), block=False)
    assert len(submitted) == 2
    started = time.monotonic()
    client.close()
    assert time.monotonic() - started < 60 / 4  # cancelled, not waited for (a minute)
    with pytest.raises(RuntimeError, match="closed"):
        client.get_task(submitted[0]["task_id"])
    client.close()  # closing twice is harmless


def test_sdk_objects_inside_messages_are_read(
    client: Composo, judge_server: ScriptedLLMServer
) -> None:
    from openai.types.chat import ChatCompletionMessage

    message = ChatCompletionMessage.model_validate(TOOL_CONVERSATION[1])
    messages = [
        TOOL_CONVERSATION[0],
        {"role": "assistant", "content": None, "tool_calls": message.tool_calls},
        *TOOL_CONVERSATION[2:],
    ]
    client.evaluate(messages=messages, criteria="Reward tool use")
    client.evaluate(
        messages=[TOOL_CONVERSATION[0], message, *TOOL_CONVERSATION[2:]], criteria="Reward tool use"
    )
    for request in judge_server.requests:
        assert "calls tool get_weather (id call_123)" in judged_content(request)
