"""The checks on odd but realistic traces: no tools, schemaless tools, Anthropic chats,
converted OTLP fixtures with and without recorded content, and very long agents."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.checks import faults
from tests.timing import LINEAR, growth
from tracejudge import checks
from tracejudge.convert import traces_from_otlp
from tracejudge.models import AgentInstance, MultiAgentTrace, ScoreResponse

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
ALL_CHECKS = [*checks.ALL, checks.budgets(max_tokens=100_000, max_seconds=600)]


def _one(check: Any, agent: AgentInstance) -> ScoreResponse | None:
    return check.evaluate(MultiAgentTrace.from_agent(agent))[agent.id]


def _call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def _tool_loop(
    results: dict[str, str], final: str, *, arguments: Any = None
) -> list[dict[str, Any]]:
    """An OpenAI chat: the user asks, each call in `results` answered in turn, a final reply."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "What is the weather in Oslo?"}]
    for index, (name, result) in enumerate(results.items()):
        call = _call(f"c{index}", name, arguments if arguments is not None else {"city": "Oslo"})
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{index}", "content": result})
    messages.append({"role": "assistant", "content": final})
    return messages


# --------------------------------------------------------------------------- shapes of agents


def test_an_agent_without_tools_is_scored_by_what_applies() -> None:
    agent = AgentInstance.from_chat_session(
        [
            {"role": "user", "content": "Name the capital of Norway."},
            {"role": "assistant", "content": "Oslo."},
        ]
    )
    assert _one(checks.tool_arguments, agent) is None
    assert _one(checks.tool_results, agent) is None
    assert _one(checks.grounded_numbers, agent) is None  # no number stated
    assert _one(checks.loops, agent).score == 1.0
    assert _one(checks.final_answer, agent).score == 1.0


@pytest.mark.parametrize("parameters", [None, {}, {"type": "object"}, "not json"])
def test_a_tool_without_a_usable_schema_takes_any_object(parameters: Any) -> None:
    tool: dict[str, Any] = {"type": "function", "function": {"name": "lookup"}}
    if parameters is not None:
        tool["function"]["parameters"] = parameters
    agent = AgentInstance.from_chat_session(
        _tool_loop({"lookup": '{"temperature": 4}'}, "It is 4 °C in Oslo.", arguments={"q": 1}),
        tools=[tool],
    )
    assert _one(checks.tool_arguments, agent).score == 1.0
    assert _one(checks.tool_results, agent).score == 1.0


def test_null_or_empty_arguments_mean_no_arguments() -> None:
    tool = {"type": "function", "function": {"name": "now", "parameters": {"type": "object"}}}
    for raw in ("", "null"):
        messages = _tool_loop({"now": "10:30"}, "It is 10:30.")
        messages[1]["tool_calls"][0]["function"]["arguments"] = raw
        agent = AgentInstance.from_chat_session(messages, tools=[tool])
        assert _one(checks.tool_arguments, agent).score == 1.0, raw


def test_tools_recorded_on_another_interaction_still_give_the_schema() -> None:
    weather = {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
    agent = AgentInstance.from_chat_session(
        [
            {"role": "user", "content": "Weather in Oslo and Lima?"},
            {"role": "assistant", "content": None, "tool_calls": [_call("c1", "get_weather", {})]},
            {"role": "tool", "tool_call_id": "c1", "content": "{}"},
            {"role": "assistant", "content": "Done."},
        ],
        tools=[weather],
    )
    agent.llm_interactions[0].tools_available = None  # this call's tools were not recorded
    result = _one(checks.tool_arguments, agent)
    assert result.score == 0.0
    assert "missing required property 'city'" in result.explanation
    assert "no tools were recorded for call 1" in result.explanation


def test_an_mcp_server_entry_stands_for_tools_not_listed_by_name() -> None:
    agent = AgentInstance.from_chat_session(
        _tool_loop({"read_file": "contents"}, "The file says hello."),
        tools=[{"type": "mcp", "server_label": "files"}],
    )
    assert _one(checks.tool_arguments, agent).score == 1.0


# --------------------------------------------------------------------------- Anthropic chats

ANTHROPIC_TOOLS = [
    {
        "name": "get_weather",
        "description": "Current weather.",
        "input_schema": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"enum": ["C", "F"]}},
            "required": ["city"],
        },
    }
]


def _anthropic(tool_input: dict[str, Any], result: Any, final: str, **block: Any) -> AgentInstance:
    return AgentInstance.from_chat_session(
        {
            "system": "You answer with tools.",
            "tools": ANTHROPIC_TOOLS,
            "messages": [
                {"role": "user", "content": "What is the weather in Oslo?"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "Let me check."},
                        {
                            "type": "tool_use",
                            "id": "tu_1",
                            "name": "get_weather",
                            "input": tool_input,
                        },
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "tu_1", "content": result, **block}
                    ],
                },
                {"role": "assistant", "content": [{"type": "text", "text": final}]},
            ],
        },
        name="claude_agent",
    )


def test_a_clean_anthropic_chat_scores_one() -> None:
    agent = _anthropic(
        {"city": "Oslo", "unit": "C"},
        [{"type": "text", "text": '{"temperature": 4, "unit": "C"}'}],
        "It is 4 °C in Oslo.",
    )
    trace = MultiAgentTrace.from_agent(agent)
    for check in checks.ALL:
        result = check.evaluate(trace)[agent.id]
        assert result is not None and result.score == 1.0, (check.name, result)


def test_anthropic_schema_violations_and_error_results_are_flagged() -> None:
    bad = _anthropic({"city": "Oslo", "unit": "K"}, "4", "It is 4 °C.")
    result = _one(checks.tool_arguments, bad)
    assert result.score == 0.0
    assert "claude_agent call 1, tool call tu_1 (get_weather)" in result.explanation
    assert "'K' is not one of 'C', 'F'" in result.explanation

    failed = _anthropic({"city": "Oslo"}, "service down", "Sorry, it failed.", is_error=True)
    result = _one(checks.tool_results, failed)
    assert result.score == 0.0 and "tu_1" in result.explanation
    assert _one(checks.final_answer, failed).score == 1.0  # an apology after an error is fair


# --------------------------------------------------------------------------- converted OTLP


def _fixture_trace(name: str) -> MultiAgentTrace:
    (trace,) = traces_from_otlp((FIXTURES / name).read_bytes())
    return trace


@pytest.mark.parametrize(
    "name",
    [
        "openllmetry.jsonl",
        "openllmetry_legacy.jsonl",
        "openllmetry_responses.jsonl",
        "openllmetry_events.jsonl",
        "genai_semconv.jsonl",
        "genai_semconv_events.jsonl",
        "openinference.jsonl",
        "openinference_responses.jsonl",
        "openllmetry_legacy_responses.jsonl",
    ],
)
def test_clean_recorded_fixtures_raise_no_finding(name: str) -> None:
    trace = _fixture_trace(name)
    for check in ALL_CHECKS:
        for agent_id, result in check.evaluate(trace).items():
            if result is not None and result.score is not None:
                assert result.score == 1.0, (check.name, agent_id, result.explanation)


def test_unrecorded_tool_results_are_not_counted_as_missing() -> None:
    # The legacy Responses instrumentation records only each call's first messages: the
    # results never appear, not even the calls themselves.
    trace = _fixture_trace("openllmetry_legacy_responses.jsonl")
    researcher = next(a for a in trace.iter_agents() if a.name == "researcher")
    results = checks.tool_results.evaluate(trace)[researcher.id]
    assert results.score is None
    assert "the later inputs do not repeat the conversation" in results.explanation
    numbers = checks.grounded_numbers.evaluate(trace)[researcher.id]
    assert numbers.score is None and "cannot be verified" in numbers.explanation


@pytest.mark.parametrize("name", ["openllmetry_events.pb", "genai_semconv_events.pb"])
def test_spans_without_content_are_not_applicable_rather_than_empty(name: str) -> None:
    # The span file alone: the content went to the log records, which are not loaded.
    trace = _fixture_trace(name)
    for agent in trace.iter_agents():
        if not agent.llm_interactions:
            continue
        final = checks.final_answer.evaluate(trace)[agent.id]
        assert final is not None and final.score is None
        assert "content capture off?" in final.explanation
        assert checks.loops.evaluate(trace)[agent.id] is None
    budget = checks.budgets(max_tokens=100_000).evaluate(trace)
    assert all(r is None or r.score == 1.0 for r in budget.values())


# --------------------------------------------------------------------------- long agents


@pytest.mark.heavy("a time ratio over agents of 250 and 2,000 interactions")
def test_a_2000_interaction_agent_is_checked_in_well_under_a_few_seconds() -> None:
    agent = faults.long_agent(2000)
    trace = MultiAgentTrace.from_agent(agent)
    results = {check.name: check.evaluate(trace)[agent.id] for check in ALL_CHECKS}

    def check_all(trace: MultiAgentTrace) -> None:
        for check in ALL_CHECKS:
            check.evaluate(trace)

    # eight times the interactions, about eight times the time, not sixty-four
    long = lambda n: MultiAgentTrace.from_agent(faults.long_agent(n))  # noqa: E731
    assert growth(check_all, 250, make=long) < LINEAR
    assert results["tool_arguments"].score == 1.0
    assert "2000 of 2000 tool calls" in results["tool_results"].explanation
    assert results["loops"].score == 1.0
    assert results["grounded_numbers"].score == 1.0
    assert results["final_answer"].score == 1.0


@pytest.mark.heavy("a time ratio over agents of 250 and 2,000 interactions")
def test_an_agent_stuck_on_one_call_for_2000_rounds_is_flagged_fast() -> None:
    agent = faults.long_agent(2000, same_call=True)
    result = _one(checks.loops, agent)
    stuck = lambda n: faults.long_agent(n, same_call=True)  # noqa: E731
    assert growth(lambda a: _one(checks.loops, a), 250, make=stuck) < LINEAR
    assert result.score == pytest.approx(2 / 2001)  # the first call and the answer stand
    assert "2000 times" in result.explanation


def test_a_deep_chain_of_agents_is_checked_without_recursion_limits() -> None:
    depth = 1500
    agents: dict[str, AgentInstance] = {}
    for level in range(depth):
        agent = AgentInstance.from_chat_session(
            [
                {"role": "user", "content": f"Level {level}: report 42."},
                {"role": "assistant", "content": "The answer is 42."},
            ],
            id=f"a{level}",
            name=f"level{level}",
        )
        if level + 1 < depth:
            agent.interactions.append(f"a{level + 1}")
        agents[agent.id] = agent
    trace = MultiAgentTrace(root_agent_instance_id="a0", agent_instance_by_id=agents)
    start = time.perf_counter()
    for check in ALL_CHECKS:
        results = check.evaluate(trace)
        assert len(results) == depth
    assert time.perf_counter() - start < 5.0
