"""Every example of the Composo SDK reference (the seed), run as written.

Only the import line changes (`tracejudge` for `composo`), and where the judge comes from:
a `judge=` argument, or the environment alone (`TRACEJUDGE_JUDGE`, or `OPENAI_BASE_URL`
for a local OpenAI-compatible server), in which case the seed's own `Composo()` is used.
One ScriptedLLMServer plays both the user's model (scripted replies, in order) and the
judge (its default reply), as a local vLLM or Ollama serving both would.
"""

from __future__ import annotations

import inspect
import json
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

from tests.evaluation.test_adapt import MCP_OUTPUT, SPACEX_OUTPUT, response_json
from tracejudge import (
    AgentTracer,
    AsyncComposo,
    Composo,
    ComposoTracer,
    EvaluationResponse,
    Instruments,
    MultiAgentTraceResponse,
)
from tracejudge.testing import RecordedRequest, Reply, ScriptedLLMServer

JUDGE_MARK = "impartial evaluator"
#: Where the judge comes from: an argument, or the environment only.
SOURCES = ("judge-argument", "TRACEJUDGE_JUDGE", "OPENAI_BASE_URL")


def judge_reply(request: RecordedRequest) -> Reply:
    """The judge: 9/10 for graded criteria, a pass for pass/fail ones."""
    asked = request.json["messages"][-1]["content"]
    if '"passed": true or false' in asked.split("Reply with only the JSON object:")[-1]:
        return Reply.text(json.dumps({"explanation": "Holds.", "applicable": True, "passed": True}))
    return Reply.text(
        json.dumps({"explanation": "Accurate and clear.", "applicable": True, "score": 9})
    )


def judge_requests(server: ScriptedLLMServer) -> list[RecordedRequest]:
    return [
        r
        for r in server.requests
        if r.json and JUDGE_MARK in str(r.json.get("messages", [{}])[0].get("content", ""))
    ]


@pytest.fixture
def model_server() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer(default=judge_reply) as server:
        yield server


@pytest.fixture(params=SOURCES)
def composo(
    request: pytest.FixtureRequest,
    model_server: ScriptedLLMServer,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Callable[..., Composo]]:
    """`Composo(...)` as the seed calls it, the judge given as an argument or by the
    environment alone."""
    monkeypatch.setenv("OPENAI_BASE_URL", model_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # the seed's own OpenAI() needs one
    if request.param == "TRACEJUDGE_JUDGE":
        monkeypatch.setenv("TRACEJUDGE_JUDGE", "openai:judge-model")
    made: list[Composo] = []

    def make(*args: Any, **kwargs: Any) -> Composo:
        if request.param == "judge-argument":
            kwargs.setdefault("judge", "openai:judge-model")
        client = Composo(*args, **kwargs)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


# --------------------------------------------------------------------------- constructor


@pytest.mark.parametrize("client_class", [Composo, AsyncComposo])
def test_constructor_defaults_are_the_seeds(client_class: type) -> None:
    parameters = inspect.signature(client_class).parameters
    defaults = {name: p.default for name, p in list(parameters.items())[:5]}
    assert defaults == {
        "api_key": None,
        "base_url": "https://platform.composo.ai",
        "num_retries": 1,
        "model_core": None,
        "timeout": 60.0,
    }


def test_constructor_examples(monkeypatch: pytest.MonkeyPatch) -> None:
    # Using API key directly: the remote platform, nothing sent yet.
    client = Composo(api_key="your_api_key_here")
    assert client.judge is None and "platform.composo.ai" in repr(client)
    client.close()

    # Using environment variable
    os.environ["COMPOSO_API_KEY"] = "your_api_key_here"
    try:
        client = Composo()
        assert client.judge is None and "platform.composo.ai" in repr(client)
        client.close()
    finally:
        del os.environ["COMPOSO_API_KEY"]

    # With custom configuration
    client = Composo(api_key="your_api_key", num_retries=3, timeout=120.0)
    assert (client.num_retries, client.timeout) == (3, 120.0)
    assert client.base_url == "https://platform.composo.ai" and client.model_core is None
    client.close()
    # "Minimum value is 1 (retries cannot be disabled)", for the judge too.
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    with Composo(num_retries=0, judge="openai:judge-model") as c:
        assert c.num_retries == 1
        assert c.judge is not None and c.judge.num_retries == 1  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- evaluate()


def test_basic_evaluation(composo: Callable[..., Composo], model_server: ScriptedLLMServer) -> None:
    client = composo()

    messages = [
        {"role": "user", "content": "What's the capital of France?"},
        {"role": "assistant", "content": "The capital of France is Paris."},
    ]

    result = client.evaluate(
        messages=messages,
        criteria="Reward accurate and informative responses",
        tags={"environment": "production", "version": "1.0.0"},
    )

    print(f"Score: {result.score}")
    print(f"Explanation: {result.explanation}")
    assert isinstance(result, EvaluationResponse)
    assert result.score == pytest.approx(8 / 9)
    assert result.explanation == "Accurate and clear."
    (judged,) = judge_requests(model_server)
    assert "The capital of France is Paris." in judged.json["messages"][-1]["content"]


def test_the_signature_example(composo: Callable[..., Composo]) -> None:
    client = composo()
    result = client.evaluate(
        messages=[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}],
        criteria="Your evaluation criterion",
        system=None,
        tools=None,
        result=None,
        block=True,
        tags={"env": "prod"},
    )
    # No known prefix: judged as a Reward criterion.
    assert result.score == pytest.approx(8 / 9)


def test_multiple_criteria_evaluation(
    composo: Callable[..., Composo], model_server: ScriptedLLMServer
) -> None:
    client = composo()
    results = client.evaluate(
        messages=[
            {"role": "user", "content": "Explain DNS briefly."},
            {"role": "assistant", "content": "DNS turns names like example.com into addresses."},
        ],
        criteria=[
            "Reward accurate information",
            "Reward clear communication",
            "Penalize overly technical jargon",
        ],
    )

    for result in results:
        print(f"Score: {result.score} - {result.explanation}")
    assert [r.criterion for r in results] == [
        "Reward accurate information",
        "Reward clear communication",
        "Penalize overly technical jargon",
    ]
    assert len(judge_requests(model_server)) == 3


def test_tool_call_evaluation(
    composo: Callable[..., Composo], model_server: ScriptedLLMServer
) -> None:
    client = composo()
    messages = [
        {"role": "user", "content": "What's the weather in SF?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_123",
                    "type": "function",
                    "function": {
                        "name": "get_weather",
                        "arguments": '{"location": "San Francisco"}',
                    },
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_123",
            "content": '{"temp": 65, "condition": "sunny"}',
        },
        {"role": "assistant", "content": "It's 65°F and sunny in San Francisco!"},
    ]

    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Get current weather for a location",
                "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
            },
        }
    ]

    result = client.evaluate(
        messages=messages, tools=tools, criteria="Reward correct tool usage and accurate responses"
    )
    assert result.score == pytest.approx(8 / 9)
    content = judge_requests(model_server)[0].json["messages"][-1]["content"]
    assert "get_weather: Get current weather for a location" in content
    assert "calls tool get_weather (id call_123)" in content
    assert '{"temp": 65, "condition": "sunny"}' in content


def test_non_blocking_evaluation(composo: Callable[..., Composo]) -> None:
    client = composo()
    # Submit evaluation without waiting
    response = client.evaluate(
        messages=[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}],
        criteria="Your criterion",
        block=False,
    )

    task_id = response["task_id"]
    print(f"Task submitted with ID: {task_id}")
    deadline = time.monotonic() + 10
    while (task := client.get_task(task_id)).status in ("queued", "running"):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert task.status == "done"
    assert task.result["score"] == pytest.approx(8 / 9)


def test_responses_api_builtin_tools(
    composo: Callable[..., Composo], model_server: ScriptedLLMServer
) -> None:
    from openai import OpenAI

    model_server.add(
        Reply.raw(
            200,
            response_json(
                SPACEX_OUTPUT,
                tools=[
                    {"type": "web_search"},
                    {"type": "code_interpreter", "container": {"type": "auto"}},
                ],
            ),
        )
    )

    openai_client = OpenAI()
    composo_client = composo()

    input_text = (
        "Search the web for the latest news story on SpaceX and write a Python script "
        "to plot their latest 3 launch dates"
    )

    response = openai_client.responses.create(
        model="gpt-4.1",
        input=input_text,
        tools=[
            {"type": "web_search"},
            {"type": "code_interpreter", "container": {"type": "auto"}},
        ],
    )

    result = composo_client.evaluate(
        input=input_text,
        result=response,
        criteria=(
            "Reward responses that search the web and produce Python code based on the results"
        ),
    )

    print(f"Score: {result.score}")
    print(f"Explanation: {result.explanation}")
    assert result.score == pytest.approx(8 / 9)
    content = judge_requests(model_server)[0].json["messages"][-1]["content"]
    assert "calls tool web_search (id ws_1)" in content
    assert "calls tool code_interpreter (id ci_1)" in content
    assert "plotted 3 launches" in content
    openai_client.close()


def test_responses_api_remote_mcp_server(
    composo: Callable[..., Composo], model_server: ScriptedLLMServer
) -> None:
    from openai import OpenAI

    mcp_tool = {
        "type": "mcp",
        "server_label": "coingecko",
        "server_url": "https://mcp.api.coingecko.com/mcp",
        "require_approval": "never",
    }
    model_server.add(Reply.raw(200, response_json(MCP_OUTPUT, tools=[mcp_tool])))
    openai_client = OpenAI()
    composo_client = composo()

    input_text = "What are the current prices of Bitcoin and Ethereum in USD?"

    response = openai_client.responses.create(model="gpt-4.1", input=input_text, tools=[mcp_tool])

    result = composo_client.evaluate(
        input=input_text,
        result=response,
        criteria=(
            "Reward responses that use the MCP tool to retrieve live cryptocurrency prices "
            "and present them clearly"
        ),
    )

    print(f"Score: {result.score}")
    print(f"Explanation: {result.explanation}")
    content = judge_requests(model_server)[0].json["messages"][-1]["content"]
    assert "calls tool get_simple_price (id mcp_1)" in content
    assert '{"bitcoin": {"usd": 97000}, "ethereum": {"usd": 3400}}' in content
    openai_client.close()


def test_context_manager_usage(composo: Callable[..., Composo]) -> None:
    with composo() as client:
        result = client.evaluate(
            messages=[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hi!"}],
            criteria="Your criterion",
        )
        print(result.score)
    with pytest.raises(RuntimeError, match="closed"):
        client.evaluate(
            messages=[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hi!"}],
            criteria="Your criterion",
        )


# --------------------------------------------------------------------------- evaluate_trace()


def test_evaluate_trace_example(
    composo_tracing: TracerProvider,
    composo: Callable[..., Composo],
    model_server: ScriptedLLMServer,
) -> None:
    from openai import OpenAI

    model_server.add(Reply.text("Quantum computers use qubits; error correction is the hurdle."))

    # Initialize tracing
    ComposoTracer.init(instruments=Instruments.OPENAI)
    openai_client = OpenAI()
    composo_client = composo()

    # Use AgentTracer context manager to capture trace
    with AgentTracer(name="research_agent") as tracer:
        response = openai_client.chat.completions.create(
            model="gpt-4", messages=[{"role": "user", "content": "Research: quantum computing"}]
        )
        result = response.choices[0].message.content

        # Get the trace object
        trace = tracer.trace

    # Evaluate the captured trace
    evaluation = composo_client.evaluate_trace(
        trace=trace,
        criteria="Reward thorough research and accurate information",
        tags={"environment": "production", "agent_version": "1.0.0"},
    )

    print(f"Overall Score: {evaluation.overall_score}")
    print(f"Explanation: {evaluation.explanation}")
    assert result.startswith("Quantum computers")
    assert isinstance(evaluation, MultiAgentTraceResponse)
    assert evaluation.overall_score == pytest.approx(8 / 9)
    assert evaluation.criterion == "Reward thorough research and accurate information"
    assert list(evaluation.agent_scores.values()) == [pytest.approx(8 / 9)]
    assert list(evaluation.results_by_agent_name) == ["research_agent"]
    assert evaluation.request_id
    assert "research_agent" in evaluation.explanation
    (judged,) = judge_requests(model_server)
    assert "Research: quantum computing" in judged.json["messages"][-1]["content"]

    # The signature example: every parameter as the seed writes it.
    again = composo_client.evaluate_trace(
        trace=trace,
        criteria="Reward thorough research and accurate information",
        model_core=None,
        block=True,
        tags={"env": "prod"},
    )
    assert again.overall_score == evaluation.overall_score
    openai_client.close()
